"""Hardened rounds sized by time on a GPU (about ROUND_MS of the harness's clock per side, 4 to 20 calls), and
the timing stage waiting out the boot of the processes started for the next kernel."""

import os
import time
from types import SimpleNamespace

from evaluator.policy import ROUND_MIN_CALLS, ROUND_MS, make_policy
from evaluator.sandbox.protocol import MessageReader, write_message
from evaluator.trusted.batch import booting
from evaluator.trusted.evaluate import wait_booted
from evaluator.trusted.rounds import Rounds, SideRound
from evaluator.trusted.speed import timing_info, timing_note


def test_a_round_holds_the_calls_that_fill_its_time_between_the_bounds():
    plan = make_policy("hardened", "cuda").timing
    assert (plan.round_ms, plan.min_round_calls, plan.round_calls) == (ROUND_MS["cuda"], ROUND_MIN_CALLS, 20)
    assert plan.calls_per_round(None) == plan.calls_per_round(0.0) == 20  # nothing known yet
    assert plan.calls_per_round(1.0) == 20
    assert plan.calls_per_round(25.0) == 10
    assert plan.calls_per_round(60.0) == 4
    assert plan.calls_per_round(5000.0) == 4


def test_a_round_size_given_or_the_cpu_keeps_every_round_alike():
    given = make_policy("hardened", "cuda", round_calls=5).timing
    assert given.round_ms == 0
    assert given.calls_per_round(100.0) == 5
    assert make_policy("hardened", "cpu").timing.calls_per_round(100.0) == 5


class Scripted(Rounds):
    """Rounds whose sides answer at once: every call takes call_ms, every loop loop_ms per call."""

    call_ms = 30.0
    loop_ms = 50.0

    @property
    def warmups(self) -> list:
        return self.__dict__.setdefault("_warmups", [])

    def turn(self, side: str, variants: list[str], message: dict) -> None:
        seeds = message["seeds"]
        self.warmups.append((side, len(message["warmup_seeds"])))
        records = {name: [[seed, self.call_ms, [0.0], {}] for seed in seeds] for name in variants}
        self.timing.rounds.append(SideRound(side, records, self.loop_ms * len(seeds), seeds))

    def candidate_round(self, message: dict) -> None:
        self.turn("candidate", ["candidate"], message)

    def reference_round(self, message: dict) -> None:
        self.turn("reference", message["variants"], message)


def test_the_first_round_is_sized_by_the_eager_time_and_the_rest_by_the_slowest_side_s_loop():
    policy = make_policy("hardened", "cuda", baselines=("eager",))
    session = SimpleNamespace(eager_ms=lambda: 30.0)
    rounds = Scripted(session=session, kernel=None, policy=policy, call_limit=1.0)
    rounds.run()
    sizes = [len(turn.seeds) for turn in rounds.timing.of("candidate")]
    # 250 ms at 30 ms: 8 calls; the budget then wants 34 calls, 40 at least; 250 ms at 50 ms a call: 5
    assert sizes == [8, 5, 5, 5, 5, 5, 5, 2]
    assert [turn.side for turn in rounds.timing.rounds[:4]] == [
        "candidate",
        "reference",
        "reference",
        "candidate",
    ]
    assert [len(turn.seeds) for turn in rounds.timing.of("reference")] == sizes
    assert timing_info(policy, sum(sizes), sizes).round_sizes == sizes
    # the first round opens with the warm-up, every later one with one untimed call on each side
    assert rounds.warmups[:4] == [("candidate", 5), ("reference", 5), ("reference", 1), ("candidate", 1)]
    assert {count for _, count in rounds.warmups[2:]} == {1}
    assert make_policy("hardened", "cpu").timing.round_warmup == 0


def test_without_an_eager_time_the_first_round_has_the_largest_size():
    policy = make_policy("hardened", "cuda", baselines=("eager",), timing_budget_ms=0)
    rounds = Scripted(session=None, kernel=None, policy=policy, call_limit=1.0)
    rounds.call_ms, rounds.loop_ms = 1.0, 100.0
    rounds.run()
    sizes = [len(turn.seeds) for turn in rounds.timing.of("candidate")]
    assert sizes[0] == 20
    assert set(sizes[1:]) == {4}
    assert sum(sizes) == 100


def test_the_timing_note_says_how_rounds_are_sized():
    assert "in rounds of about 250 ms (4 to 20 calls)" in timing_note(make_policy("hardened", "cuda"))
    assert timing_info(make_policy("kernelbench", "cuda"), 100, [101]).round_sizes is None


def test_a_message_waiting_is_seen_and_left_for_its_reader():
    read_end, write_end = os.pipe()
    reader = MessageReader(read_end)
    assert not reader.waiting(0.01)
    write_message(write_end, {"event": "ready"})
    assert reader.waiting(1.0)
    assert reader.read(time.monotonic() + 1.0) == {"event": "ready"}
    os.close(write_end)
    assert reader.waiting(1.0)  # the end of the pipe: nothing to wait for any more
    os.close(read_end)


class Child:
    def __init__(self, booted: bool):
        self.booted, self.label, self.asked = booted, "next", []

    def message_waiting(self, timeout: float) -> bool:
        self.asked.append(timeout)
        return self.booted


def test_the_timing_waits_for_the_next_processes_to_boot_at_most_its_limit():
    booted, slow = Child(True), Child(False)
    wait_booted([booted, slow], limit_s=5.0)
    assert 4.0 < booted.asked[0] <= 5.0
    assert slow.asked[0] <= booted.asked[0]
    late = Child(True)
    wait_booted([slow, late], limit_s=5.0)
    assert late.asked == []  # the limit is for all of them: one that did not boot ends the wait


def test_only_processes_whose_ready_is_unread_are_waited_for():
    child, reference = object(), object()
    launch = SimpleNamespace(started=True, child=child)
    fresh = SimpleNamespace(opened=False, problem=None, child=reference)
    sized_ahead = SimpleNamespace(opened=False, problem=object(), child=reference)
    assert booting((1, SimpleNamespace(id="k")), {1: fresh}, {"k": launch}) == [child, reference]
    assert booting((1, SimpleNamespace(id="k")), {1: sized_ahead}, {"k": launch}) == [child]
    assert booting((1, SimpleNamespace(id="k")), {}, {}) == []
