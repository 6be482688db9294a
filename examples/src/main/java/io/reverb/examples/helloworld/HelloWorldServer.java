package io.reverb.examples.helloworld;

import io.reverb.examples.ServerLauncher;
import io.reverb.examples.Uris;
import io.reverb.rpc.RpcServer;

/**
 * Serves {@code Greeter}: {@code HelloWorldServer [uri]}, by default on {@value #DEFAULT_URI}.
 */
public final class HelloWorldServer
{
    /** Where the server listens unless told otherwise. */
    public static final String DEFAULT_URI = "shm://reverb-helloworld";

    private HelloWorldServer()
    {
    }

    /**
     * @param uri where to listen.
     * @return the started server.
     */
    public static RpcServer start(final String uri)
    {
        return RpcServer.builder(uri).addService(new GreeterService()).build().start();
    }

    /**
     * @param args optional URI.
     * @throws InterruptedException if interrupted while serving.
     */
    public static void main(final String[] args) throws InterruptedException
    {
        ServerLauncher.runUntilShutdown("Greeter", start(Uris.uriFrom(args, DEFAULT_URI)));
    }
}
