from gcm_checks.cli import entry

entry()
