"""gcm-run progress parsers, tracker (percent, rate, ETA) and chunk scanner."""

from __future__ import annotations

import math

import pytest

from gcm_checks.wrapper.progress import ChunkScanner, ProgressEvent, Tracker, parse_line

NAN = float("nan")

# (line, source, step, total, loss) -- one row per format the issue names.
FORMATS = [
    # tqdm, plain and with postfix, unit-scaled, s/it, no total
    ("40%|████      | 400/1000 [05:00<07:30,  1.33it/s]", "tqdm", 400, 1000, None),
    (" 40%|████      | 400/1000 [05:00<07:30,  1.33it/s, loss=0.53]", "tqdm", 400, 1000, 0.53),
    ("train:  12%|█▏        | 1.2k/10.0k [00:10<01:13, 120.00it/s]", "tqdm", 1200, 10000, None),
    ("100%|██████████| 10/10 [00:01<00:00,  9.52s/it]", "tqdm", 10, 10, None),
    ("400it [05:00, 1.33it/s]", "tqdm", 400, None, None),
    # Hugging Face Trainer log dicts (loss NaN printed as a bare name)
    ("{'loss': 0.53, 'learning_rate': 2e-05, 'epoch': 1.2}", "hf", None, None, 0.53),
    ("{'loss': nan, 'grad_norm': nan, 'learning_rate': 2e-05, 'epoch': 1.2}", "hf", None, None, NAN),
    ('{"loss": 1.5e+00, "epoch": 0.01}', "hf", None, None, 1.5),
    # Lightning: TQDM bar with epoch prefix; Rich bar
    ("Epoch 3:  45%|████▌     | 450/1000 [01:00<01:13, 7.50it/s, v_num=0, train_loss=0.531]", "lightning", 450, 1000, 0.531),
    ("Epoch 3/9 ━━━━━━━━╸━━━━━━━━ 450/1000 0:01:00 • 0:01:13 7.50it/s v_num: 0 loss: 0.53", "lightning", 450, 1000, 0.53),
    # Megatron-LM / NeMo
    (" iteration      400/    1000 | consumed samples:       409600 | elapsed time per iteration (ms): 512.3 |"
     " learning rate: 1.000E-04 | global batch size:  1024 | lm loss: 5.123456E+00 | loss scale: 1.0 |",
     "megatron", 400, 1000, 5.123456),
    (" iteration       20/     100 | lm loss: nan | number of nan iterations:   1 |", "megatron", 20, 100, NAN),
    # generic step N/M and loss=
    ("step 40/100 loss=0.25", "step", 40, 100, 0.25),
    ("[rank0] Step: 40 / 100 | lr 3e-4", "step", 40, 100, None),
    ("epoch 1 loss: 0.3 acc 0.9", "loss", None, None, 0.3),
    ("train loss = inf", "loss", None, None, math.inf),
    # GCM_PROGRESS, the direct channel
    ('GCM_PROGRESS {"step": 4, "total": 10, "loss": 0.5}', "gcm", 4, 10, 0.5),
    ('12:00:01 INFO GCM_PROGRESS {"step": 4, "total": 10, "loss": NaN}', "gcm", 4, 10, NAN),
]


@pytest.mark.parametrize("line,source,step,total,loss", FORMATS)
def test_each_format_parses(line, source, step, total, loss):
    ev = parse_line(line)
    assert ev is not None, line
    assert ev.source == source
    assert ev.step == step
    assert ev.total == total
    if loss is None:
        assert ev.loss is None
    elif math.isnan(loss):
        assert ev.loss is not None and math.isnan(ev.loss)
    else:
        assert ev.loss == pytest.approx(loss)


@pytest.mark.parametrize("line", [
    "val_loss=0.3",  # validation loss is not the training loss
    "Loading checkpoint shards: done",
    "GCM_PROGRESS not json",
    "GCM_PROGRESS [1, 2]",
    "downloaded 40/100 files",
    "",
])
def test_non_progress_lines_are_ignored(line):
    assert parse_line(line) is None


def test_tqdm_rate_and_remaining_are_read():
    ev = parse_line("40%|████      | 400/1000 [05:00<07:30,  1.33it/s]")
    assert ev.rate == pytest.approx(1.33)
    assert ev.eta_s == 450
    slow = parse_line("50%|█████     | 5/10 [00:10<00:10,  2.00s/it]")
    assert slow.rate == pytest.approx(0.5)


def test_megatron_rate_from_ms_per_iteration():
    ev = parse_line(" iteration 10/ 20 | elapsed time per iteration (ms): 500.0 | lm loss: 1.0 |")
    assert ev.rate == pytest.approx(2.0)


# ---------------------------------------------------------------- tracker


def feed(tracker: Tracker, events):
    for t, ev in events:
        tracker.observe(ev, mono=t, wall=1_000_000.0 + t)


def test_eta_is_mean_step_time_times_remaining():
    tr = Tracker()
    feed(tr, [(0.0, ProgressEvent("step", step=100, total=1000)),
              (10.0, ProgressEvent("step", step=200, total=1000)),
              (30.0, ProgressEvent("step", step=400, total=1000))])
    s = tr.snap
    assert s.step_time_s == pytest.approx(0.1)  # 30 s for 300 steps
    assert s.eta_s == pytest.approx(60.0)  # 600 steps left
    assert s.percent == pytest.approx(40.0)
    assert s.rate == pytest.approx(10.0)


def test_percent_capped_at_99_while_running():
    tr = Tracker()
    feed(tr, [(0.0, ProgressEvent("step", step=10, total=10))])
    assert tr.snap.to_dict(running=True)["percent"] == 99.0
    assert tr.snap.to_dict(running=False)["percent"] == 100.0


def test_single_observation_uses_reported_rate():
    tr = Tracker()
    feed(tr, [(0.0, ProgressEvent("tqdm", step=400, total=1000, rate=2.0))])
    assert tr.snap.eta_s == pytest.approx(300.0)


def test_eval_bar_with_smaller_total_does_not_move_progress():
    tr = Tracker()
    feed(tr, [(0.0, ProgressEvent("tqdm", step=400, total=1000)),
              (1.0, ProgressEvent("tqdm", step=5, total=50))])
    assert (tr.snap.step, tr.snap.total) == (400, 1000)


def test_a_finished_bar_gives_way_to_the_next_one():
    tr = Tracker()
    feed(tr, [(0.0, ProgressEvent("tqdm", step=5000, total=5000)),  # tokenising the dataset: done
              (1.0, ProgressEvent("tqdm", step=10, total=1000))])  # training starts
    assert (tr.snap.step, tr.snap.total) == (10, 1000)


@pytest.mark.parametrize("line", [
    "model.safetensors: 100%|██████████| 4.50G/4.50G [00:30<00:00, 150MB/s]",
    "Downloading data:  40%|████      | 400k/1.00M [00:01<00:01, 400kB/s]",
    "copy:  40%|####      | 400/1000 [00:01<00:01, 400B/s]",
])
def test_download_bars_are_not_training_progress(line):
    assert parse_line(line) is None


def test_higher_ranked_source_takes_over():
    tr = Tracker()
    feed(tr, [(0.0, ProgressEvent("tqdm", step=3, total=8)),
              (1.0, ProgressEvent("megatron", step=40, total=100)),
              (2.0, ProgressEvent("tqdm", step=4, total=8))])
    assert (tr.snap.step, tr.snap.source) == (40, "megatron")


def test_counter_going_back_resets_the_baseline_not_the_eta():
    tr = Tracker()
    feed(tr, [(0.0, ProgressEvent("step", step=500, total=1000)),
              (10.0, ProgressEvent("step", step=600, total=1000)),
              (20.0, ProgressEvent("step", step=100, total=1000)),  # restarted from checkpoint
              (30.0, ProgressEvent("step", step=200, total=1000))])
    assert tr.snap.step_time_s == pytest.approx(0.1)
    assert tr.snap.eta_s == pytest.approx(80.0)


def test_lightning_epochs_fold_into_one_run_percent():
    tr = Tracker()
    # Rich bar "Epoch 1/3": epochs 0..3, i.e. 4 epochs of 100 steps.
    feed(tr, [(0.0, ProgressEvent("lightning", step=50, total=100, epoch=1, max_epochs=3))])
    assert tr.snap.percent == pytest.approx(150 / 400 * 100)


def test_stall_clock_only_moves_when_step_advances():
    tr = Tracker()
    feed(tr, [(0.0, ProgressEvent("step", step=1, total=10)),
              (5.0, ProgressEvent("step", step=1, total=10))])
    assert tr.snap.last_progress_mono == 0.0
    feed(tr, [(6.0, ProgressEvent("step", step=2, total=10))])
    assert tr.snap.last_progress_mono == 6.0


def test_first_bad_loss_is_remembered():
    tr = Tracker()
    feed(tr, [(0.0, ProgressEvent("loss", loss=0.5)),
              (1.0, ProgressEvent("loss", loss=NAN)),
              (2.0, ProgressEvent("loss", loss=0.4))])
    assert math.isnan(tr.snap.bad_loss)
    assert tr.snap.bad_loss_wall == 1_000_001.0
    assert tr.snap.loss == 0.4
    assert tr.snap.to_dict()["bad_loss"] == "nan"  # strict JSON has no NaN


# ---------------------------------------------------------------- chunk scanner


def test_scanner_splits_on_carriage_return_and_across_chunks():
    tr = Tracker()
    sc = ChunkScanner(tr)
    bar = "\r 40%|████      | 400/1000 [05:00<07:30,  1.33it/s]".encode()
    sc.feed(bar[:20], 0.0, 0.0)
    assert tr.snap.step is None  # half a line is not parsed
    sc.feed(bar[20:] + b"\r 41%|####      | 410/1000 [05:05<07:20,  1.33it/s]\r", 1.0, 1.0)
    assert tr.snap.step == 410


def test_scanner_sees_a_single_nan_among_many_lines():
    tr = Tracker()
    sc = ChunkScanner(tr, max_lines=4)
    lines = [f"step {i}/10000 loss=0.5" for i in range(1, 2000)]
    lines[7] = "step 8/10000 loss=nan"
    sc.feed(("\n".join(lines) + "\n").encode(), 0.0, 0.0)
    assert tr.snap.bad_loss is not None and math.isnan(tr.snap.bad_loss)
    assert tr.snap.step == 1999


def test_scanner_memory_is_bounded_without_newlines():
    tr = Tracker()
    sc = ChunkScanner(tr, max_partial=1024)
    for _ in range(1000):
        sc.feed(b"x" * 4096, 0.0, 0.0)
    assert len(sc._partial) <= 1024


def test_scanner_parses_last_line_without_newline_at_flush():
    tr = Tracker()
    sc = ChunkScanner(tr)
    sc.feed(b"step 7/9 loss=0.1", 0.0, 0.0)
    assert tr.snap.step is None
    sc.flush(1.0, 1.0)
    assert tr.snap.step == 7


def test_real_tqdm_output_is_understood(tmp_path):
    tqdm = pytest.importorskip("tqdm")
    import io

    buf = io.StringIO()
    for _ in tqdm.tqdm(range(250), total=1000, file=buf, mininterval=0, ascii=False):
        pass
    tr = Tracker()
    ChunkScanner(tr).feed(buf.getvalue().encode() + b"\n", 0.0, 0.0)
    assert (tr.snap.step, tr.snap.total) == (250, 1000)
