package io.reverb.rdma.engine;

/**
 * What the engine asks of its metrics binding, in types of its own, so that only {@link EngineMetrics}
 * names Micrometer and the engine runs without Micrometer on the class path.
 */
interface MetricsBinding extends AutoCloseable
{
    /**
     * Adds the gauges of a connection that just opened.
     *
     * @param connection the connection.
     * @param number     a number unique in this engine, for the meters' tag.
     */
    void bindConnection(Connection connection, long number);

    /**
     * Removes the gauges of a connection that closed.
     *
     * @param connection the connection.
     */
    void unbindConnection(Connection connection);

    @Override
    void close();
}
