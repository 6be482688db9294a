package io.reverb.rpc.lb;

/**
 * {@link DeadlinePropagationTest} with a plain single-address {@code RpcChannel} for the second hop.
 */
class PlainChannelDeadlinePropagationTest extends DeadlinePropagationTest
{
    @Override
    protected boolean plainChannel()
    {
        return true;
    }
}
