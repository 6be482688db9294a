package io.reverb.rdma.provider.shm;

import io.reverb.rdma.provider.base.ParkingCompletionChannel;

/**
 * A completion channel. Events come from two places: producers in this JVM that disarm one of the
 * channel's CQs signal it directly; producers in other processes ring the doorbell over their
 * connection's Unix domain socket, and the context's event thread signals the channel on their
 * behalf. The waiter parks; a signal or {@link #wakeup()} unparks it.
 */
final class ShmCompletionChannel extends ParkingCompletionChannel
{
    private final ShmVerbsContext context;

    ShmCompletionChannel(final ShmVerbsContext context)
    {
        this.context = context;
    }

    @Override
    protected void onClose()
    {
        context.removed(this);
    }
}
