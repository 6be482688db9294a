package io.reverb.bench.target;

/**
 * A running {@link io.reverb.bench.EchoService} server.
 */
public interface BenchServer extends AutoCloseable
{
    /**
     * @return the address clients use, with any ephemeral port or generated name filled in.
     */
    String uri();

    /**
     * @return registered buffers and bytes the server's transport holds right now (for leak checks once
     *         traffic has stopped), or "n/a" where the framework does not report them.
     */
    default String resourceUsage()
    {
        return "n/a";
    }

    /**
     * Stops accepting calls and releases the server's resources.
     */
    @Override
    void close();
}
