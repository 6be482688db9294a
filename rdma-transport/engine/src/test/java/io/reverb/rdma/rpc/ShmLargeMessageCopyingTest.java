package io.reverb.rdma.rpc;

/**
 * {@link ShmLargeMessageTest} with direct writes turned off ({@code shm://name?directWrite=false}): each large message
 * is serialised into the sender's own rendezvous buffer and copied into the receiver's by the fabric.
 */
class ShmLargeMessageCopyingTest extends ShmLargeMessageTest
{
    @Override
    protected boolean directWrite()
    {
        return false;
    }
}
