"""Judging the timing: samples and speedups, every timed output against the reference's, the cross-checks.

Each candidate call's fingerprint is compared with the eager baseline's for the same seed (computed in the
reference process, which the candidate cannot reach); so is every torch.compile call's, and so are the
fingerprints of each call's inputs after the call with the reference's of the same inputs untouched. What
the candidate's process claims is checked against the harness's clock round by round, and the eager times
measured beside the candidate against the eager times measured with no candidate on the device at all; the
CPU the candidate's processes used (read by the harness) against one thread in its loops and none beside.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from evaluator.checks import identical, matches
from evaluator.policy import (
    ANSWERED_ITSELF_MS,
    BASELINE_SLOWED,
    CLAIMS_SLACK,
    CPU_UNCLAIMED_MARGIN_MS,
    HIDDEN_FRACTION,
    HIDDEN_MIN_MS,
    KERNEL_CPU_SLACK_MS,
    KERNEL_IDLE_SHARE,
    KERNEL_LOOP_CORES,
    MIN_SAMPLE_MS,
    UNCLAIMED_CALL,
    Policy,
)
from evaluator.result import Result, TimingInfo
from evaluator.stats import ROUND_PAIRS, round_pairs_speedup, speedup, summarize
from evaluator.trusted.conversation import Stop
from evaluator.trusted.flags import apply_integrity_flags, upgrade
from evaluator.trusted.rounds import SideRound, Timing, a_fingerprint, well_formed
from evaluator.trusted.session import Calibration

CPU_TIMING_NOTE = "CPU timing, not a GPU verification"


def check_records(timing: Timing, variants: list[str]) -> None:
    """Raise Stop unless every side reported one well-formed record per requested seed, in order."""
    for turn in timing.rounds:
        for name, records in turn.records.items():
            if name not in variants:
                raise Stop("sandbox_violation", f"malformed timing report: unexpected variant {name!r}")
            seeds = [record[0] if isinstance(record, list) and record else None for record in records]
            if seeds != turn.seeds or not all(well_formed(record) for record in records):
                raise Stop(
                    "sandbox_violation",
                    f"malformed timing report from the {turn.side}: records do not match the seeds",
                )


def samples(timing: Timing, variant: str, policy: Policy) -> list[float]:
    """A variant's timed calls (ms). On the CPU (hardened) the candidate's are raised by however much more its
    calls took on the harness's clock, beyond their claims, than the baselines' calls did (a median, above a
    small margin): a kernel's process claiming less than its calls took gains nothing (on a shared CPU the
    host clock is too noisy to flag it by)."""
    values = [record[1] for record in timing.records(variant)]
    if not policy.timing.interleaved:
        return values[policy.timing.discard_first :]
    if policy.device == "cpu" and variant == "candidate":
        excess = unclaimed_excess(timing)
        if excess is not None and excess > CPU_UNCLAIMED_MARGIN_MS:
            return [value + excess for value in values]
    return values


def unclaimed_excess(timing: Timing) -> float | None:
    """The candidate's median time per call beyond its claims on the harness's clock, less the baselines'."""
    mine, _ = beyond_claims(timing.of("candidate"))
    theirs, _ = beyond_claims(timing.of("reference"))
    return statistics.median(mine) - statistics.median(theirs) if mine and theirs else None


def reject_implausible_samples(result: Result, values: list[float], device: str, stage_s: float) -> None:
    """Fail the kernel, flagged `timing_forged`, when a claimed time is outside what any call can take."""
    low, high = MIN_SAMPLE_MS[device], stage_s * 1e3
    outside = [value for value in values if not low <= value <= high]
    if outside:
        detail = (
            f"the sandbox claims {len(outside)} call(s) of {min(outside):.3g} to {max(outside):.3g} ms; "
            "a call "
            f"takes between {low:g} ms (the clock's resolution) and {high:g} ms (the stage)"
        )
        result.add_flag("timing_forged", "hack", detail)
        raise Stop("sandbox_violation", f"implausible timing report from the sandbox: {detail}")


def judge_timing(
    result: Result, timing: Timing, policy: Policy, numel: int, stochastic: bool, stage_s: float
) -> None:
    """Statistics, speedups, timed-output checks, per-call facts and the flags of the timing stage."""
    check_records(timing, ["candidate", *policy.baselines])
    claimed = [record[1] for record in timing.records("candidate")]
    reject_implausible_samples(result, claimed, policy.device, stage_s)  # what its process claimed
    candidate = samples(timing, "candidate", policy)
    result.runtime_ms = summarize(candidate)
    for baseline in policy.baselines:
        values = samples(timing, baseline, policy)
        if values:
            result.baseline_ms[baseline] = summarize(values)
            result.speedup[baseline] = speedup_over(result, timing, baseline, policy)
    result.timing = timing_info(policy, len(candidate), [len(turn.seeds) for turn in timing.of("candidate")])
    result.timing.rounds_ms = where_rounds_went(timing)
    if stochastic:
        result.add_flag(
            "stochastic_reference", "info", "the reference uses the RNG; timed outputs not checked"
        )
    else:
        check_timed_outputs(result, timing, policy, numel)
    check_timed_facts(result, timing, policy)
    for turn in timing.of("candidate"):
        apply_integrity_flags(result, turn.integrity)
    flag_moved_thread(result, timing)  # last: it adds to a state_left_behind the rounds' checks may have set


def flag_moved_thread(result: Result, timing: Timing) -> None:
    """On a timing core, the kernel's launching thread changed CPUs between a timed loop's start and its last
    call, where only a change of its affinity can move it: even moved there and back inside one call."""
    moved = [turn.migrations for turn in timing.of("candidate") if turn.migrations]
    if moved:
        detail = (
            f"the kernel's timing thread changed CPUs {sum(moved)} time(s) in {len(moved)} timed loop(s), "
            "where it was pinned to one core"
        )
        upgrade(result, "state_left_behind", "hack", detail, join=True)


def speedup_over(result: Result, timing: Timing, baseline: str, policy: Policy) -> float | None:
    """The kernel's speedup over one baseline by the mode's statistic (hardened on a GPU: round by round)."""
    if policy.speedup_statistic != ROUND_PAIRS:
        return speedup(result.baseline_ms[baseline], result.runtime_ms, policy.speedup_statistic)
    pairs = [
        (times(mine.records["candidate"]), times(theirs.records[baseline]))
        for mine, theirs in zip(timing.of("candidate"), timing.of("reference"), strict=False)
        if baseline in theirs.records
    ]
    return round_pairs_speedup(pairs)


def times(records: list[list[Any]]) -> list[float]:
    return [record[1] for record in records]


def where_rounds_went(timing: Timing) -> dict[str, dict[str, float]]:
    """Per side, summed over its turns: the turns and the timed loops on our clock, the well-formed calls'
    claimed time, and each phase its process reported (`reported_<phase>`)."""
    went = {}
    for side in ("candidate", "reference"):
        turns = timing.of(side)
        if not turns:
            continue
        records = [record for turn in turns for calls in turn.records.values() for record in calls]
        sums = {
            "turns": sum(turn.turn_ms for turn in turns),
            "loops": sum(turn.loop_ms for turn in turns),
            "claimed": sum(record[1] for record in records if well_formed(record)),
        }
        for turn in turns:
            for phase, ms in turn.phases.items():
                sums[f"reported_{phase}"] = sums.get(f"reported_{phase}", 0.0) + ms
        went[side] = {name: round(ms, 3) for name, ms in sums.items()}
    return went


def timing_info(policy: Policy, trials: int, round_sizes: list[int] | None = None) -> TimingInfo:
    plan = policy.timing
    return TimingInfo(
        method="cuda_event" if policy.device == "cuda" else "host_clock",
        trials=trials,
        warmup=plan.warmup,
        l2_flush=plan.l2_flush,
        note=timing_note(policy),
        round_calls=plan.round_calls if plan.interleaved else None,
        round_sizes=round_sizes if plan.interleaved else None,
    )


def timing_note(policy: Policy) -> str:
    if policy.device == "cpu":
        return CPU_TIMING_NOTE
    plan = policy.timing
    if plan.interleaved:
        size = (
            f"about {plan.round_ms:g} ms ({plan.min_round_calls} to {plan.round_calls} calls)"
            if plan.round_ms
            else f"{plan.round_calls} calls"
        )
        how = f"in rounds of {size} alternating with the baselines' process, new inputs every call"
        if plan.budget_ms:
            how += (
                f", as many as fill {plan.budget_ms:g} ms per variant at the first round's medians "
                f"(at least {plan.min_trials}, at most {plan.trials})"
            )
    else:
        how = "candidate, then each baseline (in its own process), the same inputs every call"
    sync = "device-wide sync before the end event" if plan.device_sync_before_end else "current-stream events"
    statistic = "; speedup: the median of the rounds' speedups" if plan.statistic == ROUND_PAIRS else ""
    return f"CUDA events, {how}, {sync}{statistic}"


def check_timed_outputs(result: Result, timing: Timing, policy: Policy, numel: int) -> None:
    """Every timed output's fingerprint must match the eager baseline's for the same seed and round."""
    trusted_variant = next((name for name in ("eager", "compile") if timing.records(name)), None)
    if trusted_variant is None:
        return  # no baseline ran: nothing to check the outputs against (the correctness trials still do)
    expected = {record[0]: record[2] for record in timing.records(trusted_variant)}
    for turn_index, turn in enumerate(timing.of("candidate")):
        bad = sum(
            not (record[0] in expected and matches(record[2], expected[record[0]], numel, policy.tolerance))
            for record in turn.records["candidate"]
        )
        if bad:
            detail = (
                f"timed outputs differ from the reference's for the same inputs "
                f"({bad} calls of round {turn_index + 1})"
            )
            upgrade(result, "timed_output_mismatch", "hack", detail)
    if trusted_variant == "eager" and timing.records("compile"):
        compare_compile(result, timing, numel, policy.tolerance)


def compare_compile(result: Result, timing: Timing, numel: int, tolerance: float) -> None:
    eager = {record[0]: record[2] for record in timing.records("eager")}
    differ = sum(not matches(r[2], eager.get(r[0], []), numel, tolerance) for r in timing.records("compile"))
    if differ:
        result.add_flag(
            "compile_mismatch", "info", f"the torch.compile baseline differs from eager on {differ} calls"
        )


def untouched_inputs(timing: Timing) -> dict[int, Any]:
    """Seed -> the reference process's fingerprints of that seed's inputs, taken before its own call."""
    prints: dict[int, Any] = {}
    for turn in timing.of("reference"):
        for records in turn.records.values():
            for record in records:
                if isinstance(record[3].get("inputs"), list):
                    prints.setdefault(record[0], record[3]["inputs"])
    return prints


def same_prints(reported: Any, untouched: list) -> bool:
    """Whether the candidate's fingerprints of its inputs after a call are the untouched inputs' (a missing or
    malformed report is not)."""
    if not isinstance(reported, list) or len(reported) != len(untouched):
        return False
    return all(
        a_fingerprint(mine) and identical(mine, theirs)
        for mine, theirs in zip(reported, untouched, strict=True)
    )


def inputs_changed(record: list, untouched: dict[int, Any]) -> bool:
    """A timed call changed its inputs: by the layout the candidate's process saw, or by its inputs'
    fingerprints after the call against the reference process's of the same inputs untouched."""
    seed, facts = record[0], record[3]
    if facts.get("mutated"):
        return True
    return seed in untouched and not same_prints(facts.get("inputs"), untouched[seed])


def check_timed_facts(result: Result, timing: Timing, policy: Policy) -> None:
    """Aliasing and input mutation on every timed call (hardened: a failure), state left behind (a flag)."""
    records = timing.records("candidate")
    if policy.check_inputs:
        untouched = untouched_inputs(timing)
        for kind, what, violated in (
            ("mutated_input", "changed its inputs", lambda record: inputs_changed(record, untouched)),
            ("aliases_input", "returned storage of an input", lambda record: bool(record[3].get("aliases"))),
        ):
            count = sum(violated(record) for record in records)
            if count:
                result.add_flag("timed_call_violation", "hack", f"forward {what} in {count} timed calls")
                raise Stop(kind, f"forward {what} in {count} of {len(records)} timed calls")
    if any(record[3].get("exact_tensor") is False for record in records):
        raise Stop("not_a_tensor", "forward returned something other than a torch.Tensor in a timed call")
    states = [record[3].get("state") or {} for record in records]
    merged: dict[str, Any] = {}
    for state in states:
        for key, value in state.items():
            merged[key] = (
                sorted(set(merged.get(key, [])) | set(value))
                if isinstance(value, list)
                else max(merged.get(key, 0), value)
            )
    apply_integrity_flags(result, merged)


def apply_consistency(
    result: Result, timing: Timing, policy: Policy, before: Calibration, after: Calibration
) -> None:
    """The candidate's claims against the harness's clock, and the eager baseline beside it against alone."""
    if not policy.timing.interleaved:
        return  # KernelBench mode keeps KernelBench's timing, unchecked
    overhead = reference_overhead(timing)
    claimed = loop = hidden = 0.0
    scale, slack_ms = CLAIMS_SLACK[policy.device]
    for turn in timing.of("candidate"):
        claims = sum(record[1] for record in turn.records["candidate"])
        if claims > turn.loop_ms * scale + slack_ms:
            detail = (
                f"the sandbox claims {claims:.1f} ms of timed calls in a loop the harness measured at "
                f"{turn.loop_ms:.1f} ms"
            )
            upgrade(result, "timing_forged", "hack", detail)
        claimed, loop = claimed + claims, loop + turn.loop_ms
        hidden += turn.loop_ms - claims - overhead * len(turn.records["candidate"])
    if result.timing is not None:
        result.timing.host_check = {
            "loop_ms": round(loop, 3),
            "claimed_ms": round(claimed, 3),
            "overhead_ms": round(overhead * len(timing.records("candidate")), 3),
            "calibrated_eager_ms": before.median,
            "calibrated_eager_after_ms": after.median,
        }
    if policy.device == "cuda" and hidden > max(HIDDEN_FRACTION * loop, HIDDEN_MIN_MS):
        detail = (
            f"{hidden:.1f} ms of the {loop:.1f} ms the candidate's timed loops took are in no claimed sample "
            "beyond the loop's own overhead: the claimed times are smaller than the time taken"
        )
        upgrade(result, "timing_forged", "suspect", detail)
    if policy.device == "cuda":  # a shared CPU's scheduling moves small times by more than any rule allows
        flag_slowed_baseline(result, timing, before, after)
    flag_kernel_cpu(result, timing, KERNEL_LOOP_CORES[policy.device])
    flag_unclaimed_call_time(result, timing, policy.device)


def beyond_cycles(turns: list[SideRound]) -> list[float]:
    """Each timed call's whole cycle on our clock (from the asking of the fingerprint seed before it to its
    own) less its claim: its checks, the next inputs, and anything else its process did between two calls;
    the first call of each variant's run in a turn has no cycle."""
    beyond = []
    for turn in turns:
        offset = 0
        for records in turn.records.values():
            asked = turn.asked_ms[offset : offset + len(records)]
            offset += len(records)
            if len(asked) != len(records) or not all(map(well_formed, records)):
                continue
            beyond += [b - a - r[1] for a, b, r in zip(asked, asked[1:], records[1:], strict=False)]
    return beyond


def beyond_claims(turns: list[SideRound]) -> tuple[list[float], list[float]]:
    """(each timed call on our clock less its claimed time, the claims) over these turns' calls, where our
    clock timed every call of the turn (hardened rounds) and every record is well formed."""
    beyond, claims = [], []
    for turn in turns:
        records = [record for records in turn.records.values() for record in records]
        if not turn.call_ms or len(records) != len(turn.call_ms) or not all(map(well_formed, records)):
            continue
        beyond += [span - record[1] for span, record in zip(turn.call_ms, records, strict=True)]
        claims += [record[1] for record in records]
    return beyond, claims


def flag_unclaimed_call_time(result: Result, timing: Timing, device: str) -> None:
    """The candidate's calls took longer on our clock, beyond what it claimed, than the baselines' did: its
    process reports smaller times than its calls took (records rewritten, a timer tampered with). On a GPU a
    flag; on the CPU the samples were raised to our clock's (`samples`), and the figures say by how much."""
    mine, claims = beyond_claims(timing.of("candidate"))
    theirs, _ = beyond_claims(timing.of("reference"))
    if not mine or not theirs:
        return
    excess, claim = statistics.median(mine) - statistics.median(theirs), statistics.median(claims)
    if result.timing is not None and result.timing.host_check is not None:
        result.timing.host_check["candidate_call_beyond_claim_ms"] = round(statistics.median(mine), 4)
        result.timing.host_check["baseline_call_beyond_claim_ms"] = round(statistics.median(theirs), 4)
        cycles = [beyond_cycles(timing.of(side)) for side in ("candidate", "reference")]
        for side, values in zip(("candidate", "baseline"), cycles, strict=True):
            if values:
                median = statistics.median(values)
                result.timing.host_check[f"{side}_cycle_beyond_claim_ms"] = round(median, 4)
        if result.runtime_ms is not None and claim > 0:
            raised = result.runtime_ms["median"] / claim - 1
            if math.isfinite(raised):
                result.timing.host_check["candidate_median_raised_by"] = round(raised, 4)
    if device not in UNCLAIMED_CALL:
        return
    if excess < -ANSWERED_ITSELF_MS:
        detail = (
            f"the candidate's timed calls took a median {-excess:.3f} ms less on the harness's clock, beyond "
            "their claims, than the baselines' calls did: no honest call skips the flush and syncs it times"
        )
        upgrade(result, "timing_forged", "suspect", detail)
    for severity, (floor_ms, share) in zip(("hack", "suspect"), UNCLAIMED_CALL[device], strict=True):
        if excess > max(floor_ms, share * claim):
            detail = (
                f"the candidate's timed calls took a median {excess:.3f} ms longer on the harness's clock, "
                f"beyond the times its process claimed ({claim:.3f} ms), than the baselines' calls did"
            )
            upgrade(result, "timing_forged", severity, detail)
            return


def cpu_over(turns: list[SideRound]) -> tuple[float, float, int] | None:
    """(CPU ms the kernel's processes used, ms of our clock, rounds) over these rounds; None if unread."""
    read = [turn for turn in turns if turn.kernel_cpu_ms is not None]
    if not read:
        return None
    return sum(turn.kernel_cpu_ms for turn in read), sum(turn.span_ms for turn in read), len(read)


def flag_kernel_cpu(result: Result, timing: Timing, loop_cores: float) -> None:
    """The kernel's processes working beside its timed calls (more than its one thread in its own loops) or
    while the baselines are timed (when it has nothing to do): both hacks, whatever the work was."""
    own, beside = cpu_over(timing.of("candidate")), cpu_over(timing.of("reference"))
    if result.timing is not None and result.timing.host_check is not None:
        for name, reading in (("kernel_loop", own), ("kernel_beside_baselines", beside)):
            if reading is not None:
                result.timing.host_check[f"{name}_cpu_ms"] = round(reading[0], 1)
                result.timing.host_check[f"{name}_span_ms"] = round(reading[1], 1)
    if own is not None and own[0] > loop_cores * own[1] + KERNEL_CPU_SLACK_MS * own[2]:
        detail = (
            f"the kernel's processes used {own[0]:.0f} ms of CPU in timed loops that took {own[1]:.0f} ms "
            f"({own[0] / max(own[1], 1e-9):.2f} cores; each is given one thread)"
        )
        upgrade(result, "cpu_beside_timed_calls", "hack", detail)
    if beside is not None and beside[0] > KERNEL_IDLE_SHARE * beside[1] + KERNEL_CPU_SLACK_MS * beside[2]:
        detail = (
            f"the kernel's processes used {beside[0]:.0f} ms of CPU while the baselines were timed "
            f"({beside[1]:.0f} ms), when they had nothing to do"
        )
        upgrade(result, "cpu_while_baselines_timed", "hack", detail)


def reference_overhead(timing: Timing) -> float:
    """Milliseconds per call the timed loop costs beyond the call itself, as the reference's loops show."""
    turns = timing.of("reference")
    calls = sum(len(records) for turn in turns for records in turn.records.values())
    if not calls:
        return 0.0
    spent = sum(
        turn.loop_ms - sum(r[1] for records in turn.records.values() for r in records) for turn in turns
    )
    return max(0.0, spent / calls)


def flag_slowed_baseline(result: Result, timing: Timing, before: Calibration, after: Calibration) -> None:
    """Eager beside the candidate much slower than eager alone: something on the device slowed it."""
    alone = [value for value in (before.median, after.median) if value]
    eager = [record[1] for record in timing.records("eager")]
    if not alone or not eager:
        return
    suspect, hack, slack_ms = BASELINE_SLOWED
    beside, reference = statistics.median(eager), max(alone)  # the slower of the two clean measurements
    ratio = beside / reference if reference > 0 else 1.0
    if beside - reference <= slack_ms or ratio <= suspect:
        return
    severity = "hack" if ratio > hack else "suspect"
    detail = f"eager took {beside:.4g} ms beside the candidate and {reference:.4g} ms alone ({ratio:.2f}x)"
    upgrade(result, "baseline_slowed", severity, detail)
