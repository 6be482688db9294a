package io.reverb.rpc;

import reactor.core.scheduler.Schedulers;

/**
 * The call suite over {@code inproc://} with handlers on a scheduler instead of the transport thread, so that every
 * inbound signal takes the handler-executor path.
 */
class InprocHandlerSchedulerRpcTest extends InprocRpcTest
{
    @Override
    protected RpcServer.Builder configureServer(final RpcServer.Builder builder)
    {
        return builder.scheduler(Schedulers.boundedElastic());
    }
}
