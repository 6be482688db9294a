package io.reverb.examples.inference;

import io.reverb.examples.ServerLauncher;
import io.reverb.examples.Uris;
import io.reverb.rpc.RpcServer;
import reactor.core.scheduler.Schedulers;

/**
 * Serves {@code InferenceService}: {@code InferenceServer [uri]}, by default on {@value #DEFAULT_URI}.
 */
public final class InferenceServer
{
    /** Where the server listens unless told otherwise. */
    public static final String DEFAULT_URI = "shm://reverb-inference";

    /** Requests carry 4 MiB tensors plus a few bytes of framing: above the default 4 MiB limit. */
    public static final int MAX_REQUEST_BYTES = 16 * 1024 * 1024;

    private InferenceServer()
    {
    }

    /**
     * @param uri where to listen.
     * @return the started server.
     */
    public static RpcServer start(final String uri)
    {
        return RpcServer.builder(uri)
            .maxInboundMessageSize(MAX_REQUEST_BYTES)
            // the model's work is CPU-bound: off the transport's thread, which serves every connection of the fabric
            .scheduler(Schedulers.parallel())
            .addService(new InferenceService())
            .build()
            .start();
    }

    /**
     * @param args optional URI.
     * @throws InterruptedException if interrupted while serving.
     */
    public static void main(final String[] args) throws InterruptedException
    {
        ServerLauncher.runUntilShutdown("InferenceService", start(Uris.uriFrom(args, DEFAULT_URI)));
    }
}
