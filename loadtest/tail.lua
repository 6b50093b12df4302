-- wrk script for the load-test scripts: after the run, one line with the latency tail that
-- wrk's --latency leaves out (p98 and p99.9, in microseconds), for loadtest/wrk_report.py.
-- Without a request() function wrk keeps sending its one prepared request (no Lua per request).
done = function(summary, latency, requests)
  io.write(string.format("tail_us p90=%d p98=%d p999=%d max=%d\n",
    latency:percentile(90), latency:percentile(98), latency:percentile(99.9), latency.max))
end
