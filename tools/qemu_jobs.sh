# Sourced by the QEMU legs (tools/riscv/test.sh, tools/arm64/test.sh): runs test suites side by side
# (QEMU user mode runs a test binary on one host core), each one's output printed whole when the
# batch is done, so the log reads as if they had run one after another.
#   job_start cmd args...   start one in the background (its stdout+stderr to a temporary file)
#   job_wait                wait for all started; print their outputs in start order; fails if any did
_job_pids=()
_job_logs=()
job_start() {
  local log
  log=$(mktemp)
  _job_logs+=("$log")
  # Each job's time at the end of its output (which suites cost the leg its minutes).
  # (_job_t0, _job_rc: names the jobs' own functions do not use; run_suite's loop variable is t)
  (_job_t0=$SECONDS; _job_rc=0; "$@" || _job_rc=$?; echo "   [job: $(( SECONDS - _job_t0 )) s]"; exit "$_job_rc") \
    >"$log" 2>&1 &
  _job_pids+=($!)
}
job_wait() {
  local rc=0 i
  for i in "${!_job_pids[@]}"; do
    if ! wait "${_job_pids[$i]}"; then rc=1; fi
    cat "${_job_logs[$i]}"
    rm -f "${_job_logs[$i]}"
  done
  _job_pids=()
  _job_logs=()
  return $rc
}
