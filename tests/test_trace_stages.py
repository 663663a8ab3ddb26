"""bench/trace_stages.py: a traced batch summed by command, and where each child's GPU peak rose."""

from bench import trace_stages

TRACE = """\
10.0 MainThread t.py reference > describe
900.0 MainThread t.py reference < described gpu_peak_mib=2048
901.0 MainThread t.py reference > expect
1400.0 MainThread t.py reference < expected gpu_peak_mib=6144
1401.0 MainThread t.py reference > verdict
1500.0 MainThread t.py reference < verdict gpu_peak_mib=6144
1500.5 MainThread k.py candidate > import
2500.0 MainThread k.py candidate < imported gpu_peak_mib=512
2600.0 MainThread k.py candidate < round
"""


def test_peaks_are_read_and_each_rise_is_charged_to_the_command_whose_reply_showed_it(tmp_path):
    path = tmp_path / "batch.trace"
    path.write_text(TRACE)
    lines = trace_stages.read_trace(path)
    assert len(lines) == 9  # replies with a peak are read like the others
    assert [line.gpu_peak_mib for line in lines[:2]] == [None, 2048]
    assert trace_stages.peak_rises(lines) == [
        ("t.py", "reference", "describe", 2048, 2048),
        ("t.py", "reference", "expect", 4096, 6144),
        ("k.py", "candidate", "import", 512, 512),
    ]
    charged = trace_stages.charged(lines)
    assert round(charged[("t.py", "reference", ">describe")], 3) == 0.89
