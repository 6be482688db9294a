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
     * Stops accepting calls and releases the server's resources.
     */
    @Override
    void close();
}
