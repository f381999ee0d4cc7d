"""Every trainer format gcm-run follows, from documented lines and from output
captured from the real libraries (tests/fixtures/run/, see capture.py there:
tqdm 4.70.1, rich 15.0.0; the Hugging Face and Lightning files follow those
libraries' own progress callbacks)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from gcm_checks.wrapper.progress import HISTORY_POINTS, ChunkScanner, Series, Tracker, parse_line

FIX = Path(__file__).parent / "fixtures" / "run"
NAN = float("nan")

# (line, source, step, total, loss, metrics that must be read)
FORMATS = [
    # Keras 2 and Keras 3 progress bars
    ("400/1000 [===========>..................] - ETA: 1:23 - loss: 0.5312 - accuracy: 0.8100",
     "keras", 400, 1000, 0.5312, {"accuracy": 0.81}),
    ("400/1000 ━━━━━━━━━━━━━━━━━━━━ 1:23 84ms/step - accuracy: 0.8100 - loss: 0.5300",
     "keras", 400, 1000, 0.53, {"accuracy": 0.81}),
    # DeepSpeed engine and throughput timer
    ("[Rank 0] step=400, skipped=0, lr=[9.9e-05], mom=[(0.9, 0.999)]", "deepspeed", 400, None, None, {"learning_rate": 9.9e-05}),
    ("steps: 400 loss: 0.5123 iter time (s): 0.512 samples/sec: 62.500", "deepspeed", 400, None, 0.5123, {}),
    # torchtitan, with the colours it prints on a terminal
    ("\x1b[31mstep: 400  \x1b[32mloss:  5.1234  \x1b[33mmemory: 30.12GiB(38.12%)  \x1b[34mtps: 7,123  "
     "\x1b[35mtflops: 312.45  \x1b[35mmfu: 31.59%\x1b[39m", "torchtitan", 400, None, 5.1234, {"tps": 7123.0, "mfu": 31.59}),
    # Megatron-LM with learning rate and grad norm
    (" iteration      400/    1000 | consumed samples:       409600 | elapsed time per iteration (ms): 512.3 |"
     " learning rate: 1.000E-04 | global batch size:  1024 | lm loss: 5.123456E+00 | loss scale: 1.0 | grad norm: 1.234 |",
     "megatron", 400, 1000, 5.123456, {"learning_rate": 1e-4, "grad_norm": 1.234}),
    # JAX / Flax: CLU LoggingWriter, MaxText, Flax examples
    ("I1201 12:00:00.123 140 logging_writer.py:48] [400] learning_rate=0.001, loss=0.5123", "jax", 400, None, 0.5123,
     {"learning_rate": 0.001}),
    ("completed step: 400, seconds: 0.512, TFLOP/s/device: 190.1, Tokens/s/device: 8000.2, total_weights: 8192, loss: 5.123",
     "jax", 400, None, 5.123, {}),
    ("train epoch: 3, loss: 0.2917, accuracy: 91.27", "jax", None, None, 0.2917, {"accuracy": 91.27}),
    # Hugging Face Trainer dicts: loss, grad norm, learning rate, eval metrics
    ("{'loss': 0.31, 'grad_norm': 1.2, 'learning_rate': 4e-05, 'epoch': 0.5}", "hf", None, None, 0.31,
     {"grad_norm": 1.2, "learning_rate": 4e-05}),
    ("{'eval_loss': 0.41, 'eval_accuracy': 0.9, 'eval_runtime': 1.5, 'epoch': 1.0}", "hf", None, None, None,
     {"eval_loss": 0.41, "eval_accuracy": 0.9}),
    # plain step counters, with and without a total
    ("step 400", "step", 400, None, None, {}),
    ("Step 400: loss=0.3 lr=3e-4", "step", 400, None, 0.3, {"learning_rate": 3e-4}),
    ("step 40/100 loss=0.25 grad_norm=0.9", "step", 40, 100, 0.25, {"grad_norm": 0.9}),
    # the direct channel, with extra metrics
    ('GCM_PROGRESS {"step": 4, "total": 10, "loss": 0.5, "metrics": {"lr": 0.1}}', "gcm", 4, 10, 0.5, {"lr": 0.1}),
]


@pytest.mark.parametrize("line,source,step,total,loss,metrics", FORMATS)
def test_each_trainer_format(line, source, step, total, loss, metrics):
    ev = parse_line(line)
    assert ev is not None, line
    assert (ev.source, ev.step, ev.total) == (source, step, total)
    assert (ev.loss is None) if loss is None else ev.loss == pytest.approx(loss)
    got = dict(ev.metrics)
    for k, v in metrics.items():
        assert got.get(k) == pytest.approx(v), (k, got)


@pytest.mark.parametrize("line", [
    "warmup_steps=1000 max_steps=5000",  # configuration, not progress
    "Downloading: 40/100 [00:01<00:02, 40.0MB/s]",
    "loading 400/1000 files",
    "{'train_runtime': 12.5, 'train_samples_per_second': 25.6}",
])
def test_lookalikes_are_not_progress(line):
    ev = parse_line(line)
    assert ev is None or (ev.step is None and ev.loss is None and not ev.metrics), ev


@pytest.mark.parametrize("raw", [
    'GCM_PROGRESS {"eta_s": Infinity}',
    'GCM_PROGRESS {"step": Infinity, "total": -Infinity, "rate": NaN}',
    'GCM_PROGRESS {"step": 1e400}',
    'GCM_PROGRESS ' + "[" * 5000 + "]" * 5000,
    'GCM_PROGRESS {"step": -5, "percent": "x"}',
])
def test_hostile_gcm_progress_is_harmless(raw):
    ev = parse_line(raw)
    tr = Tracker()
    if ev is not None:
        assert ev.step is None or math.isfinite(ev.step)
        assert ev.eta_s is None or math.isfinite(ev.eta_s)
        tr.observe(ev, 1.0, 1.0)
    tr.snap.to_dict(running=True, mono=2.0)


def scan(tr, stream_bytes, chunk=4096):
    """Feed a capture as the pump would, one read per ``chunk`` bytes, a
    second apart (a trainer logs a loss dict every few seconds)."""
    sc = ChunkScanner(tr)
    for i in range(0, len(stream_bytes), chunk):
        sc.feed(stream_bytes[i:i + chunk], float(i), float(i))
    sc.flush(1e9, 1e9)
    return sc


def test_captured_hugging_face_trainer_two_streams():
    # Bar on stderr, loss dicts on stdout, each its own scanner: the last
    # loss, the learning rate, grad norm and eval metrics all arrive.
    tr = Tracker()
    scan(tr, (FIX / "hf_trainer.stderr").read_bytes())
    scan(tr, (FIX / "hf_trainer.stdout").read_bytes(), chunk=1)  # each dict its own read, as in a real run
    assert (tr.snap.step, tr.snap.total) == (40, 40)
    assert tr.snap.loss == pytest.approx(0.05)  # the last point, not the end-of-run mean
    assert tr.metrics["learning_rate"] == 0.0 and tr.metrics["grad_norm"] == 1.25
    assert tr.metrics["eval_loss"] == pytest.approx(0.1234)
    assert [round(p[2], 4) for p in tr.history["loss"].points] == [0.2, 0.1, 0.0667, 0.05]


def test_one_buffer_for_both_streams_would_glue_a_dict_to_a_bar():
    """Why the pump keeps one scanner per stream: on a shared buffer the
    stdout dict lands mid-line after a bar with no newline, and is lost."""
    bar = b"\r 50%|#####     | 20/40 [00:01<00:01, 20.00it/s]"
    line = b"{'loss': 0.1, 'grad_norm': 1.25, 'learning_rate': 2.5e-05, 'epoch': 0.5}\n"
    shared = Tracker()
    sc = ChunkScanner(shared)
    sc.feed(bar, 0, 0)
    sc.feed(line, 0, 0)
    apart = Tracker()
    ChunkScanner(apart).feed(bar, 0, 0)
    ChunkScanner(apart).feed(line, 0, 0)
    assert shared.snap.loss is None  # the old single-buffer behaviour: the loss is lost
    assert apart.snap.loss == 0.1 and apart.metrics["learning_rate"] == 2.5e-05


def test_a_loss_line_followed_by_many_bar_redraws_in_one_read_is_kept():
    data = b"{'loss': 0.42, 'grad_norm': 2.0, 'learning_rate': 1e-05, 'epoch': 0.1}\n" + b"".join(
        b"\r%3d%%|##   | %d/1000 [00:01<00:10, 90.00it/s]" % (i // 10, i) for i in range(100, 400)) + b"\n"
    tr = Tracker()
    ChunkScanner(tr).feed(data, 1.0, 1.0)
    assert tr.snap.step == 399 and tr.snap.loss == 0.42 and tr.metrics["grad_norm"] == 2.0


def test_captured_lightning_tqdm_bar_folds_epochs():
    tr = Tracker()
    scan(tr, (FIX / "lightning_tqdm.stderr").read_bytes())
    assert tr.snap.source == "lightning" and tr.snap.epoch == 1 and tr.snap.step == 50
    assert tr.snap.loss == pytest.approx(0.010)


def test_captured_rich_progress_bar():
    tr = Tracker()
    scan(tr, (FIX / "rich_progress.stdout").read_bytes())
    assert (tr.snap.step, tr.snap.total) == (120, 300)
    assert tr.snap.percent == pytest.approx(40.0)


def test_keras_epochs_fold_into_one_run():
    tr = Tracker()
    text = b"Epoch 1/4\n10/10 [==============================] - 1s 10ms/step - loss: 0.9\n" \
           b"Epoch 2/4\n5/10 [==============>...............] - ETA: 0s - loss: 0.7\n"
    ChunkScanner(tr).feed(text, 1.0, 1.0)
    assert tr.snap.step == 5 and tr.snap.epoch == 2 and tr.snap.percent == pytest.approx(100 * 15 / 40)


def test_history_is_bounded_and_spans_the_whole_run():
    s = Series(cap=100)
    for i in range(100_000):
        s.add(float(i), float(i), float(i))
    assert len(s.points) <= 100
    assert s.points[0][0] == 0.0 and s.points[-1][0] > 90_000
    tr = Tracker()
    for i in range(20_000):
        tr.observe(parse_line(f"step {i}/20000 loss={1 / (i + 1)} lr=0.1"), float(i), float(i))
    assert all(len(v.points) <= HISTORY_POINTS for v in tr.history.values())
    assert set(tr.history) >= {"step", "loss", "learning_rate"}


def test_metric_names_are_bounded():
    tr = Tracker()
    for i in range(500):
        tr.observe(parse_line('GCM_PROGRESS {"metrics": {"m%d": 1.0}}' % i), 1.0, 1.0)
    assert len(tr.history) <= 16 and len(tr.metrics) <= 64


def test_heartbeat_lines_with_the_same_step_do_not_count_as_progress():
    tr = Tracker()
    tr.observe(parse_line("step 400"), 10.0, 10.0)
    tr.observe(parse_line("step 400"), 500.0, 500.0)
    assert tr.snap.last_progress_mono == 10.0
