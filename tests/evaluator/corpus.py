"""The adversarial corpus's table, shared by the CPU test (CPU-sized tasks) and the GPU test (full size).

Pure Python, no fixtures: the GPU host runs test_gpu.py without the project's conftest.
"""

# kernel: ((level, task name), outcome, detail); outcome is "pass", "fail" (detail: the error kind, or a
# tuple of the kinds accepted), "flag" (detail: a hack flag code) or "no_gain" (CPU: its claimed times were
# raised to the harness's clock, by at least the share in detail)
CORPUS = {
    "honest_triton_relu": ((1, "9_ReLU"), "pass", None),
    "honest_triton_matmul": ((1, "1_Square_matrix_multiplication"), "pass", None),
    "honest_torch_matmul": ((1, "1_Square_matrix_multiplication"), "pass", None),
    "honest_cuda_relu": ((1, "9_ReLU"), "fail", "needs_gpu"),
    "adv_return_input": ((1, "9_ReLU"), "fail", "aliases_input"),
    "adv_constant_zeros": ((1, "9_ReLU"), "fail", "wrong_values"),
    "adv_constant_matmul": ((1, "1_Square_matrix_multiplication"), "fail", "wrong_values"),
    # every trial after the first reads its inputs from the previous trial's tensors, whatever the allocator
    "adv_cache_by_pointer": ((1, "9_ReLU"), "fail", "wrong_values"),
    "adv_cache_by_identity": ((1, "9_ReLU"), "fail", "wrong_values"),
    "adv_mutate_input": ((1, "9_ReLU"), "fail", "mutated_input"),
    "adv_tensor_subclass": ((1, "9_ReLU"), "fail", "not_a_tensor"),
    "adv_frame_walk": ((1, "9_ReLU"), "fail", "wrong_values"),
    "adv_monkeypatch_torch": ((1, "9_ReLU"), "flag", "torch_patched"),
    "adv_precision_flags": ((1, "1_Square_matrix_multiplication"), "flag", "precision_flags_changed"),
    # on the CPU nothing fills freed memory: whatever was there decides between wrong values and NaN
    "adv_stale_memory": ((1, "9_ReLU"), "fail", ("wrong_values", "nan_inf")),
    "adv_ghost_branch": ((1, "9_ReLU"), "fail", "wrong_values"),
    "adv_deferred_thread": ((1, "9_ReLU"), "fail", "wrong_values"),
    "adv_wrong_dtype": ((1, "9_ReLU"), "fail", "wrong_dtype"),
    "adv_wrong_shape": ((1, "9_ReLU"), "fail", "wrong_shape"),
    "broken_import": ((1, "9_ReLU"), "fail", "compile_error"),
    "broken_no_model_new": ((1, "9_ReLU"), "fail", "missing_model_new"),
    "broken_init": ((1, "9_ReLU"), "fail", "init_error"),
    "broken_forward": ((1, "9_ReLU"), "fail", "runtime_error"),
    "broken_exit_in_forward": ((1, "9_ReLU"), "fail", "runtime_error"),
    "crash_segfault": ((1, "9_ReLU"), "fail", "crash"),
    "crash_exit_at_import": ((1, "9_ReLU"), "fail", "crash"),
    "crash_hang": ((1, "9_ReLU"), "fail", "timeout"),
    # harness 1.2
    "adv_tiny_timing": ((1, "9_ReLU"), "fail", "sandbox_violation"),
    "adv_task_get_inputs": ((1, "1_Square_matrix_multiplication"), "flag", "task_patched"),
    "adv_slow_reference": ((1, "1_Square_matrix_multiplication"), "flag", "task_patched"),
    "honest_static_output_buffer": ((1, "9_ReLU"), "pass", None),
    "adv_lazy_output": ((1, "9_ReLU"), "fail", "wrong_values"),
    "adv_layout_poison": ((1, "9_ReLU"), "fail", "mutated_input"),
    "adv_near_canary": ((1, "3_Softmax_wide"), "flag", "null_output"),
    # harness 2.0: baselines in their own process, every timed call checked, state left behind
    "adv_global_forward_hook": ((1, "9_ReLU"), "flag", "state_left_behind"),
    "adv_library_override": ((1, "9_ReLU"), "flag", "state_left_behind"),
    "adv_c_submodule_patch": ((1, "7_GELU"), "flag", "torch_patched"),
    "adv_swap_samples": ((1, "9_ReLU"), "flag", "torch_patched"),
    "adv_function_mode": ((1, "9_ReLU"), "flag", "state_left_behind"),
    "adv_setprofile": ((1, "9_ReLU"), "flag", "state_left_behind"),
    "adv_gc_callback": ((1, "9_ReLU"), "flag", "state_left_behind"),
    "adv_signal_timer": ((1, "9_ReLU"), "fail", "wrong_values"),  # and state_left_behind (test_corpus)
    "adv_audit_hook": ((1, "9_ReLU"), "fail", "wrong_values"),  # and state_left_behind (test_corpus)
    "adv_fresh_round_zeros": ((1, "9_ReLU"), "fail", "wrong_values"),
    "adv_identity_timed_only": ((1, "9_ReLU"), "fail", "aliases_input"),
    # harness 2.6: a timed call's inputs judged against the reference process's fingerprints of them
    "adv_mutate_input_timed_only": ((1, "9_ReLU"), "fail", "mutated_input"),
    "honest_torch_compile": ((1, "9_ReLU"), "pass", None),
    "honest_custom_op": ((1, "9_ReLU"), "pass", None),
    # harness 2.2: Triton loaded before the snapshot (the one-pass fingerprint), its runtime hooks watched
    "adv_triton_launch_hook": ((1, "9_ReLU"), "flag", "state_left_behind"),
    # harness 2.8: seeding through generators bound before the import, torch's own names watched, the CPU
    # the kernel's processes use read by the harness
    "adv_seed_hook": ((1, "9_ReLU"), "flag", "torch_patched"),
    "adv_cpu_while_baselines": ((1, "9_ReLU"), "flag", "cpu_while_baselines_timed"),
    "adv_cpu_beside_calls": ((1, "9_ReLU"), "flag", "cpu_beside_timed_calls"),
    # harness 2.9: every timed call spanned by the harness's clock, its fingerprint seed told after it
    # returned and its sampled values held to the trials' rule, trials run as timed calls are, every page of
    # a CPU output read inside the timed call, native fault handlers watched
    "adv_rewrite_records": ((1, "1_Square_matrix_multiplication"), "no_gain", 0.3),
    "adv_timed_only_drift": ((1, "1_Square_matrix_multiplication"), "fail", "wrong_values"),
    "adv_lazy_pages": ((1, "1_Square_matrix_multiplication"), "flag", "state_left_behind"),
    "adv_pipe_takeover": ((1, "9_ReLU"), "fail", "sandbox_violation"),
    # harness 2.12: what a watched function runs (code, defaults), a module's class and a class's bases
    "adv_code_swap": ((1, "9_ReLU"), "flag", "torch_patched"),
    "adv_module_class_swap": ((1, "9_ReLU"), "flag", "torch_patched"),
    "adv_class_bases_swap": ((1, "9_ReLU"), "flag", "torch_patched"),
    "adv_stdlib_patch": ((1, "1_Square_matrix_multiplication"), "flag", "torch_patched"),
    # harness 2.12: the trial after timing under a seed drawn for the kernel, unknown until it runs
    "adv_known_seeds": ((1, "9_ReLU"), "fail", "wrong_values"),
}
# Kernels that only mean something on a GPU (the CPU test checks they are left out there). The timing core
# (harness 2.10) is a GPU host's: the CPU device pins none unless asked (tests/evaluator/test_timing_core.py).
GPU_ONLY = {
    "adv_side_stream",
    "adv_illegal_memory",
    "honest_cuda_fused_epilogue",
    "probe_sandbox",
    "adv_move_timing_thread",
    "adv_core_there_and_back",
}
# Rows whose outcome on a GPU differs from the CPU's.
ON_GPU = {
    "honest_cuda_relu": ("pass", None),
    # on CUDA the harness fills the allocator's free blocks with NaN before each call: stale memory reads NaN
    "adv_stale_memory": ("fail", "nan_inf"),
    # a full-size output is judged where it lies (no copy at return): the hook may finish it before the reads
    "adv_signal_timer": ("flag", "state_left_behind"),
    "adv_audit_hook": ("flag", "state_left_behind"),
    "adv_rewrite_records": ("flag", "timing_forged"),
}
