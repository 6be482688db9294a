package io.reverb.bench.jmh;

import io.reverb.rpc.lb.SubchannelLoad;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;

/**
 * What the balancer's bookkeeping costs one call, on the caller's thread: {@code untimed} is a call under
 * pick_first or round_robin (counted in and out, no clock read), {@code timed} one under peak_ewma (two clock reads
 * and the latency average's update), as every call paid before {@link SubchannelLoad#startCall()} timed only for a
 * policy that reads the average.
 * {@code bin/reverb-bench jmh SubchannelLoadBenchmark}
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class SubchannelLoadBenchmark extends JmhSettings
{
    private final SubchannelLoad untimedLoad = SubchannelLoad.withDefaults();
    private final SubchannelLoad timedLoad = SubchannelLoad.withDefaults();

    /** Constructed as the balancer's are; the timed one has been read by a picker, as peak_ewma does on each pick. */
    public SubchannelLoadBenchmark()
    {
        timedLoad.cost(System.nanoTime());
    }

    /** A call's start and end under a policy that never reads the latency. */
    @Benchmark
    public void untimed()
    {
        untimedLoad.endCall(untimedLoad.startCall());
    }

    /** A call's start and end under peak_ewma. */
    @Benchmark
    public void timed()
    {
        timedLoad.endCall(timedLoad.startCall());
    }
}
