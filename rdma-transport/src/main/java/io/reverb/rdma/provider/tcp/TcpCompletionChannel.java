package io.reverb.rdma.provider.tcp;

import io.reverb.rdma.provider.ParkingCompletionChannel;

/**
 * A completion channel: an armed CQ that receives a completion (on the NIC thread, or on a thread
 * posting to a QP in ERROR) counts one event here and unparks the waiter.
 */
final class TcpCompletionChannel extends ParkingCompletionChannel
{
    private final TcpVerbsContext context;

    TcpCompletionChannel(final TcpVerbsContext context)
    {
        this.context = context;
    }

    @Override
    protected void onClose()
    {
        context.removed(this);
    }
}
