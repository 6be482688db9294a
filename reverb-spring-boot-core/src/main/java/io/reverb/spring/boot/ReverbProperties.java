package io.reverb.spring.boot;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.util.unit.DataSize;

/**
 * Reverb's settings under {@code reverb.*}:
 *
 * <pre>
 * reverb.server.address=reverb://0.0.0.0:9090       # or shm://name, tcp://host:port, rdma://host:port
 * reverb.server.auth-token=${REVERB_TOKEN}          # both sides prove they hold it (every fabric)
 * reverb.server.tls.bundle=server                   # spring.ssl.bundle.pem.server.* (or .jks.server.*)
 * reverb.server.tls.client-auth=require             # mutual TLS
 * reverb.client.channels.greeter.address=tcp://greeter:9090
 * reverb.client.channels.greeter.auth-token=${REVERB_TOKEN}
 * reverb.client.channels.greeter.tls.bundle=client  # its trust store: the CA of the server's certificate
 * </pre>
 *
 * Addresses are passed to Reverb as they are, so any scheme of a Reverb transport on the class path works. TLS is
 * that of {@code tcp://} (and of {@code reverb://}'s tcp connection), shaped like Spring gRPC's
 * {@code spring.grpc.server.ssl.*}: a Spring Boot SSL bundle's name, {@code enabled} (by default: whether a bundle is
 * named) and, on a server, {@code client-auth}.
 */
@ConfigurationProperties(prefix = "reverb")
public class ReverbProperties
{
    private final Server server = new Server();
    private final Client client = new Client();
    private final Observations observations = new Observations();
    private final Metrics metrics = new Metrics();

    /** @return the server's settings. */
    public Server getServer()
    {
        return server;
    }

    /** @return the channels' settings. */
    public Client getClient()
    {
        return client;
    }

    /** @return the Micrometer Observation settings. */
    public Observations getObservations()
    {
        return observations;
    }

    /** @return the Micrometer metrics settings. */
    public Metrics getMetrics()
    {
        return metrics;
    }

    /** How the server stops when the application context closes. */
    public enum Shutdown
    {
        /** Stop accepting, tell clients to go away, let calls in flight finish within the grace period. */
        GRACEFUL,
        /** Cancel every call and close every connection at once. */
        IMMEDIATE
    }

    /** The server that serves the application's service beans. */
    public static class Server
    {
        /** Whether to serve the application's service beans at all (a server starts only when there is one). */
        private boolean enabled = true;
        /**
         * Where to listen: reverb://host:port (tcp there, and shm or rdma where both sides can), tcp://host:port
         * (port 0: ephemeral), shm://name, rdma://host:port (needs
         * reverb-transport-rdma), or any scheme of a Reverb transport on the class path.
         */
        private String address = "reverb://0.0.0.0:9090";
        /** GRACEFUL or IMMEDIATE; by default what Spring Boot's server.shutdown says (graceful unless set). */
        private Shutdown shutdown;
        /**
         * How long calls in flight may run after a graceful shutdown began; by default
         * spring.lifecycle.timeout-per-shutdown-phase (30 s unless set).
         */
        private Duration shutdownGracePeriod;
        /** Largest request message accepted (default 4 MiB, as gRPC). */
        private DataSize maxInboundMessageSize;
        /** Most calls one connection may run at once (default 4096, RpcServer's). */
        private Integer maxConcurrentCallsPerConnection;
        /**
         * Most memory one connection's compressed requests may hold, copied and inflated (default 64MB, RpcServer's);
         * beyond it a compressed request fails RESOURCE_EXHAUSTED.
         */
        private DataSize maxInflatedBytesPerConnection;
        /**
         * How often the server PINGs each connection; a client that answers nothing within keep-alive-timeout is
         * closed and its calls end (default 2h, as grpc-java's server).
         */
        private Duration keepAliveTime;
        /** How long the server waits for an answer to its keep-alive PING (default 20s). */
        private Duration keepAliveTimeout;
        /** A connection without calls this long is drained: GOAWAY, then close (default: never). */
        private Duration maxConnectionIdle;
        /** A connection this old (+-10%) is drained, so that clients rebalance (default: never). */
        private Duration maxConnectionAge;
        /** How long a drained old connection's calls may still run (default: as long as they take). */
        private Duration maxConnectionAgeGrace;
        /** Whether to serve Reverb's health service (reverb.health.v1.Health), whose statuses Actuator reports. */
        private boolean healthServiceEnabled = true;
        /**
         * Shared secret every client must prove it holds (challenge-response in the engine handshake of tcp, shm,
         * rdma and reverb); clients set the same reverb.client.channels.NAME.auth-token. None by default.
         */
        private String authToken;
        /** TLS of the tcp:// listener (and of reverb://'s), from a Spring Boot SSL bundle. */
        private final ServerTls tls = new ServerTls();
        /**
         * Whether to serve the grpc-java BindableService beans (with reverb-grpc). Unset (the default): yes, unless
         * Spring gRPC's or net.devh's gRPC server is in the context, which serves them itself; true: on Reverb too
         * (give the two servers different ports); false: never.
         */
        private Boolean grpcServices;

        /** @return whether the server may start. */
        public boolean isEnabled()
        {
            return enabled;
        }

        /** @param enabled whether the server may start. */
        public void setEnabled(final boolean enabled)
        {
            this.enabled = enabled;
        }

        /** @return the address to listen on. */
        public String getAddress()
        {
            return address;
        }

        /** @param address the address to listen on. */
        public void setAddress(final String address)
        {
            this.address = address;
        }

        /** @return GRACEFUL, IMMEDIATE, or null for Spring Boot's server.shutdown. */
        public Shutdown getShutdown()
        {
            return shutdown;
        }

        /** @param shutdown GRACEFUL or IMMEDIATE. */
        public void setShutdown(final Shutdown shutdown)
        {
            this.shutdown = shutdown;
        }

        /** @return the grace period, or null for spring.lifecycle.timeout-per-shutdown-phase. */
        public Duration getShutdownGracePeriod()
        {
            return shutdownGracePeriod;
        }

        /** @param shutdownGracePeriod the grace period. */
        public void setShutdownGracePeriod(final Duration shutdownGracePeriod)
        {
            this.shutdownGracePeriod = shutdownGracePeriod;
        }

        /** @return the largest request message, or null for Reverb's default. */
        public DataSize getMaxInboundMessageSize()
        {
            return maxInboundMessageSize;
        }

        /** @param maxInboundMessageSize the largest request message. */
        public void setMaxInboundMessageSize(final DataSize maxInboundMessageSize)
        {
            this.maxInboundMessageSize = maxInboundMessageSize;
        }

        /** @return the most calls per connection, or null for RpcServer's default. */
        public Integer getMaxConcurrentCallsPerConnection()
        {
            return maxConcurrentCallsPerConnection;
        }

        /** @param maxConcurrentCallsPerConnection the most calls per connection. */
        public void setMaxConcurrentCallsPerConnection(final Integer maxConcurrentCallsPerConnection)
        {
            this.maxConcurrentCallsPerConnection = maxConcurrentCallsPerConnection;
        }

        /** @return the most bytes one connection's compressed requests may hold, or null for RpcServer's default. */
        public DataSize getMaxInflatedBytesPerConnection()
        {
            return maxInflatedBytesPerConnection;
        }

        /** @param maxInflatedBytesPerConnection the most bytes one connection's compressed requests may hold. */
        public void setMaxInflatedBytesPerConnection(final DataSize maxInflatedBytesPerConnection)
        {
            this.maxInflatedBytesPerConnection = maxInflatedBytesPerConnection;
        }

        /** @return the server's keep-alive PING interval, or null for RpcServer's default (2 h). */
        public Duration getKeepAliveTime()
        {
            return keepAliveTime;
        }

        /** @param keepAliveTime the server's keep-alive PING interval. */
        public void setKeepAliveTime(final Duration keepAliveTime)
        {
            this.keepAliveTime = keepAliveTime;
        }

        /** @return how long a keep-alive PING may go unanswered, or null for RpcServer's default (20 s). */
        public Duration getKeepAliveTimeout()
        {
            return keepAliveTimeout;
        }

        /** @param keepAliveTimeout how long a keep-alive PING may go unanswered. */
        public void setKeepAliveTimeout(final Duration keepAliveTimeout)
        {
            this.keepAliveTimeout = keepAliveTimeout;
        }

        /** @return the idle time after which a connection is drained, or null for never. */
        public Duration getMaxConnectionIdle()
        {
            return maxConnectionIdle;
        }

        /** @param maxConnectionIdle the idle time after which a connection is drained. */
        public void setMaxConnectionIdle(final Duration maxConnectionIdle)
        {
            this.maxConnectionIdle = maxConnectionIdle;
        }

        /** @return the age after which a connection is drained, or null for never. */
        public Duration getMaxConnectionAge()
        {
            return maxConnectionAge;
        }

        /** @param maxConnectionAge the age after which a connection is drained. */
        public void setMaxConnectionAge(final Duration maxConnectionAge)
        {
            this.maxConnectionAge = maxConnectionAge;
        }

        /** @return how long a drained old connection's calls may run, or null for as long as they take. */
        public Duration getMaxConnectionAgeGrace()
        {
            return maxConnectionAgeGrace;
        }

        /** @param maxConnectionAgeGrace how long a drained old connection's calls may run. */
        public void setMaxConnectionAgeGrace(final Duration maxConnectionAgeGrace)
        {
            this.maxConnectionAgeGrace = maxConnectionAgeGrace;
        }

        /** @return whether the health service is served. */
        public boolean isHealthServiceEnabled()
        {
            return healthServiceEnabled;
        }

        /** @param healthServiceEnabled whether the health service is served. */
        public void setHealthServiceEnabled(final boolean healthServiceEnabled)
        {
            this.healthServiceEnabled = healthServiceEnabled;
        }

        /** @return the token clients must prove they hold, or null for none. */
        public String getAuthToken()
        {
            return authToken;
        }

        /** @param authToken the token clients must prove they hold. */
        public void setAuthToken(final String authToken)
        {
            this.authToken = authToken;
        }

        /** @return the listener's TLS settings. */
        public ServerTls getTls()
        {
            return tls;
        }

        /** @return whether to serve the BindableService beans, or null: unless another gRPC server serves them. */
        public Boolean getGrpcServices()
        {
            return grpcServices;
        }

        /** @param grpcServices whether to serve the BindableService beans (null: unless another gRPC server does). */
        public void setGrpcServices(final Boolean grpcServices)
        {
            this.grpcServices = grpcServices;
        }
    }

    /**
     * TLS from a Spring Boot SSL bundle ({@code spring.ssl.bundle.pem.NAME.*} or {@code spring.ssl.bundle.jks.NAME.*}),
     * as Spring gRPC's {@code ssl.*}: the bundle's key store is this side's certificate and key, its trust store the
     * CAs the peer's certificate must chain to, its protocols (if set) the TLS versions.
     */
    public static class Tls
    {
        /** Whether to use TLS; by default, whether a bundle is named. */
        private Boolean enabled;
        /** The name of the SSL bundle (spring.ssl.bundle.*.NAME). */
        private String bundle;

        /** @return whether TLS is on, or null to follow {@link #getBundle()}. */
        public Boolean getEnabled()
        {
            return enabled;
        }

        /** @param enabled whether TLS is on. */
        public void setEnabled(final Boolean enabled)
        {
            this.enabled = enabled;
        }

        /** @return the SSL bundle's name, or null. */
        public String getBundle()
        {
            return bundle;
        }

        /** @param bundle the SSL bundle's name. */
        public void setBundle(final String bundle)
        {
            this.bundle = bundle;
        }
    }

    /** Whether a server asks its clients for a certificate (Spring gRPC's {@code client-auth}). */
    public enum ClientAuth
    {
        /** Not asked. */
        NONE,
        /** Asked; a client without one is admitted, one with an untrusted one refused. */
        OPTIONAL,
        /** Mutual TLS: a client without a trusted certificate is refused. */
        REQUIRE
    }

    /** A server's TLS: the bundle (its key store is required) and whether clients must present a certificate. */
    public static class ServerTls extends Tls
    {
        /** NONE (default), OPTIONAL or REQUIRE (mutual TLS; the bundle's trust store holds the clients' CA). */
        private ClientAuth clientAuth = ClientAuth.NONE;

        /** @return whether clients are asked for a certificate. */
        public ClientAuth getClientAuth()
        {
            return clientAuth;
        }

        /** @param clientAuth whether clients are asked for a certificate. */
        public void setClientAuth(final ClientAuth clientAuth)
        {
            this.clientAuth = clientAuth;
        }
    }

    /** A channel's TLS: the bundle (its trust store; its key store for mutual TLS) and host name checking. */
    public static class ChannelTls extends Tls
    {
        /**
         * Whether the server's certificate must name the host or IP address dialled (default true); turn it off only
         * when the bundle's trust store pins the server's own certificate.
         */
        private boolean verifyHostname = true;

        /** @return whether the server's certificate must name the host dialled. */
        public boolean isVerifyHostname()
        {
            return verifyHostname;
        }

        /** @param verifyHostname whether the server's certificate must name the host dialled. */
        public void setVerifyHostname(final boolean verifyHostname)
        {
            this.verifyHostname = verifyHostname;
        }
    }

    /** The channels the application calls other services through. */
    public static class Client
    {
        /** The channels by name: reverb.client.channels.NAME.address and the other settings of a channel. */
        private final Map<String, Channel> channels = new LinkedHashMap<>();

        /** @return the channels by name. */
        public Map<String, Channel> getChannels()
        {
            return channels;
        }
    }

    /** One named channel. */
    public static class Channel
    {
        /**
         * The server's address (shm://name, tcp://host:port, rdma://host:port, reverb://host:port), several
         * comma-separated, or a resolver target such as dns:///host:port.
         */
        private String address;
        /** Deadline of calls made without one. */
        private Duration defaultDeadline;
        /** Load-balancing policy over the addresses: pick_first (default) or round_robin. */
        private String loadBalancingPolicy;
        /** Pick only replicas whose health service reports this service SERVING ("" for the whole server). */
        private String healthCheck;
        /** Largest response message accepted (default 4 MiB, as gRPC). */
        private DataSize maxInboundMessageSize;
        /** Keep-alive PING interval while calls are open (default 30 s). */
        private Duration keepAliveTime;
        /** How long a keep-alive PING may go unanswered before the connection is closed (default 10 s). */
        private Duration keepAliveTimeout;
        /** The server's token (its reverb.server.auth-token), proven in the engine handshake. None by default. */
        private String authToken;
        /** TLS to a tcp:// (or reverb://) server, from a Spring Boot SSL bundle. */
        private final ChannelTls tls = new ChannelTls();

        /** @return the address or target. */
        public String getAddress()
        {
            return address;
        }

        /** @param address the address or target. */
        public void setAddress(final String address)
        {
            this.address = address;
        }

        /** @return the default deadline, or null. */
        public Duration getDefaultDeadline()
        {
            return defaultDeadline;
        }

        /** @param defaultDeadline the default deadline. */
        public void setDefaultDeadline(final Duration defaultDeadline)
        {
            this.defaultDeadline = defaultDeadline;
        }

        /** @return the load-balancing policy, or null for pick_first. */
        public String getLoadBalancingPolicy()
        {
            return loadBalancingPolicy;
        }

        /** @param loadBalancingPolicy the load-balancing policy. */
        public void setLoadBalancingPolicy(final String loadBalancingPolicy)
        {
            this.loadBalancingPolicy = loadBalancingPolicy;
        }

        /** @return the service health-checked, or null for none. */
        public String getHealthCheck()
        {
            return healthCheck;
        }

        /** @param healthCheck the service health-checked. */
        public void setHealthCheck(final String healthCheck)
        {
            this.healthCheck = healthCheck;
        }

        /** @return the largest response message, or null for Reverb's default. */
        public DataSize getMaxInboundMessageSize()
        {
            return maxInboundMessageSize;
        }

        /** @param maxInboundMessageSize the largest response message. */
        public void setMaxInboundMessageSize(final DataSize maxInboundMessageSize)
        {
            this.maxInboundMessageSize = maxInboundMessageSize;
        }

        /** @return the keep-alive interval, or null for the default. */
        public Duration getKeepAliveTime()
        {
            return keepAliveTime;
        }

        /** @param keepAliveTime the keep-alive interval. */
        public void setKeepAliveTime(final Duration keepAliveTime)
        {
            this.keepAliveTime = keepAliveTime;
        }

        /** @return the keep-alive timeout, or null for the default. */
        public Duration getKeepAliveTimeout()
        {
            return keepAliveTimeout;
        }

        /** @param keepAliveTimeout the keep-alive timeout. */
        public void setKeepAliveTimeout(final Duration keepAliveTimeout)
        {
            this.keepAliveTimeout = keepAliveTimeout;
        }

        /** @return the server's token, or null for none. */
        public String getAuthToken()
        {
            return authToken;
        }

        /** @param authToken the server's token. */
        public void setAuthToken(final String authToken)
        {
            this.authToken = authToken;
        }

        /** @return the channel's TLS settings. */
        public ChannelTls getTls()
        {
            return tls;
        }
    }

    /** Micrometer Observations (traces and timers) of every call, with the context's ObservationRegistry. */
    public static class Observations
    {
        /** Whether calls are observed when the context has an ObservationRegistry. */
        private boolean enabled = true;

        /** @return whether calls are observed. */
        public boolean isEnabled()
        {
            return enabled;
        }

        /** @param enabled whether calls are observed. */
        public void setEnabled(final boolean enabled)
        {
            this.enabled = enabled;
        }
    }

    /** Reverb's transport metrics (messages, bytes, credits, pools, pollers), in the context's MeterRegistry. */
    public static class Metrics
    {
        /** Whether Reverb's metrics are registered when the context has a MeterRegistry. */
        private boolean enabled = true;

        /** @return whether metrics are registered. */
        public boolean isEnabled()
        {
            return enabled;
        }

        /** @param enabled whether metrics are registered. */
        public void setEnabled(final boolean enabled)
        {
            this.enabled = enabled;
        }
    }
}
