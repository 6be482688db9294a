package io.reverb.spring.boot;

import org.springframework.context.ApplicationEvent;

/**
 * Published when the Reverb server of the context has bound its address and serves, as Spring Boot's
 * {@code WebServerInitializedEvent} is for a web server: the address as bound (an ephemeral port such as
 * {@code tcp://127.0.0.1:0} resolved) and its port. The same values are in the environment as
 * {@code local.reverb.address} and {@code local.reverb.port} (property source {@value ReverbServerLifecycle#PORTS}).
 * A server started again (a lifecycle restart) publishes it again.
 */
public class ReverbServerStartedEvent extends ApplicationEvent
{
    private static final long serialVersionUID = 1L;

    private final String address;
    private final int port;

    /**
     * @param server  the server's lifecycle (the event's source).
     * @param address the address as bound.
     * @param port    its port, or -1 when the address has none ({@code shm://name}).
     */
    public ReverbServerStartedEvent(final ReverbServerLifecycle server, final String address, final int port)
    {
        super(server);
        this.address = address;
        this.port = port;
    }

    /**
     * @return the server's lifecycle.
     */
    public ReverbServerLifecycle getServer()
    {
        return (ReverbServerLifecycle)getSource();
    }

    /**
     * @return the address as bound, e.g. {@code tcp://127.0.0.1:40123} or {@code shm://greeter}.
     */
    public String getAddress()
    {
        return address;
    }

    /**
     * @return the bound port, or -1 when the address has none ({@code shm://name}).
     */
    public int getPort()
    {
        return port;
    }
}
