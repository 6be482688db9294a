package io.reverb.examples.routeguide;

import io.reverb.examples.ServerLauncher;
import io.reverb.examples.Uris;
import io.reverb.rpc.RpcServer;

/**
 * Serves {@code RouteGuide}: {@code RouteGuideServer [uri]}, by default on {@value #DEFAULT_URI}.
 */
public final class RouteGuideServer
{
    /** Where the server listens unless told otherwise. */
    public static final String DEFAULT_URI = "shm://reverb-routeguide";

    private RouteGuideServer()
    {
    }

    /**
     * @param uri where to listen.
     * @return the started server.
     */
    public static RpcServer start(final String uri)
    {
        return RpcServer.builder(uri)
            .addService(new RouteGuideService(RouteGuideData.features(), System::nanoTime))
            .build()
            .start();
    }

    /**
     * @param args optional URI.
     * @throws InterruptedException if interrupted while serving.
     */
    public static void main(final String[] args) throws InterruptedException
    {
        ServerLauncher.runUntilShutdown("RouteGuide", start(Uris.uriFrom(args, DEFAULT_URI)));
    }
}
