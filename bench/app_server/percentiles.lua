-- wrk: prints requests/s and latency percentiles (microseconds) as one
-- machine-readable line, for run.rb.
done = function(summary, latency, requests)
  io.write(string.format("RESULT rps=%.1f p50=%d p90=%d p99=%d p999=%d errors=%d\n",
    summary.requests / (summary.duration / 1e6),
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency:percentile(99.9),
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.status + summary.errors.timeout))
end
