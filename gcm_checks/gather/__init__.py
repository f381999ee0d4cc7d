"""Gatherers: read hardware once into frozen snapshots; checks judge them."""
