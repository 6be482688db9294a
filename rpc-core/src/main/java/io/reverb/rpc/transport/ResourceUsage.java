package io.reverb.rpc.transport;

/**
 * What a transport holds right now: buffers (send slots claimed or in flight, undelivered inbound messages,
 * rendezvous buffers, ...) and their bytes. Used by tests to assert that nothing leaks and that memory stays bounded
 * under a slow consumer; also useful in metrics.
 */
public interface ResourceUsage
{
    /** Nothing in use. */
    ResourceUsage NONE = new ResourceUsage()
    {
        @Override
        public long buffersInUse()
        {
            return 0;
        }

        @Override
        public long bytesInUse()
        {
            return 0;
        }
    };

    /**
     * @return buffers (slots, messages, credits) currently held.
     */
    long buffersInUse();

    /**
     * @return bytes currently held in those buffers.
     */
    long bytesInUse();

    /**
     * @return the most bytes held at once since the last {@link #resetHighWaterMark()}, or -1 if not tracked.
     */
    default long bytesInUseHighWaterMark()
    {
        return -1;
    }

    /**
     * Starts a new high-water-mark period.
     */
    default void resetHighWaterMark()
    {
    }

    /**
     * @return a short description for assertion messages.
     */
    default String describe()
    {
        return "buffers=" + buffersInUse() + ", bytes=" + bytesInUse();
    }
}
