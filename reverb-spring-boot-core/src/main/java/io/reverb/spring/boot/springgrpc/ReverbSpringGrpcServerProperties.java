package io.reverb.spring.boot.springgrpc;

import io.grpc.ServerBuilder;
import io.reverb.grpc.ReverbServerBuilder;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.springframework.boot.context.properties.bind.BindException;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.core.env.Environment;
import org.springframework.grpc.server.ServerBuilderCustomizer;
import org.springframework.util.unit.DataSize;

/**
 * Spring gRPC's server properties, applied to the builder of a {@link ReverbSpringGrpcServerFactory}: Spring gRPC maps
 * them only onto the servers its own auto-configuration makes (Netty, shaded Netty, in-process), so without this a
 * Reverb server declared with Spring gRPC's factory API would ignore them without a word. The auto-configuration
 * registers it as a {@code ServerBuilderCustomizer<ReverbServerBuilder>} bean, first in order, so a factory built with
 * the context's customizers ({@code new ReverbSpringGrpcServerFactory(address, customizers)}) takes them and the
 * application's own customizers still have the last word.
 *
 * <table>
 *   <caption>The properties and the builder methods they set</caption>
 *   <tr><th>property</th><th>{@link ReverbServerBuilder} method</th></tr>
 *   <tr><td>{@code spring.grpc.server.keep-alive.time}</td><td>{@code keepAliveTime}</td></tr>
 *   <tr><td>{@code spring.grpc.server.keep-alive.timeout}</td><td>{@code keepAliveTimeout}</td></tr>
 *   <tr><td>{@code spring.grpc.server.keep-alive.max-idle}</td><td>{@code maxConnectionIdle}</td></tr>
 *   <tr><td>{@code spring.grpc.server.keep-alive.max-age}</td><td>{@code maxConnectionAge}</td></tr>
 *   <tr><td>{@code spring.grpc.server.keep-alive.max-age-grace}</td><td>{@code maxConnectionAgeGrace}</td></tr>
 *   <tr><td>{@code spring.grpc.server.keep-alive.permit-time}</td><td>{@code permitKeepAliveTime}</td></tr>
 *   <tr><td>{@code spring.grpc.server.keep-alive.permit-without-calls}</td><td>{@code permitKeepAliveWithoutCalls}</td></tr>
 *   <tr><td>{@code spring.grpc.server.max-inbound-message-size}</td><td>{@code maxInboundMessageSize}</td></tr>
 *   <tr><td>{@code spring.grpc.server.max-inbound-metadata-size}</td><td>{@code maxInboundMetadataSize}</td></tr>
 * </table>
 *
 * Only the properties set in the environment are applied. Spring gRPC's Netty server also applies its defaults
 * (2 h / 20 s keep-alive, 4 MiB and 8 KiB limits, the same as Reverb's), and with them a 5-minute PING policy that
 * Netty always enforces; Reverb enforces one only when it is asked for, because native Reverb channels PING every 30 s
 * while calls are open. A value the builder refuses (zero, negative, more than 2 GiB) fails the server's creation with
 * the property's name.
 */
public final class ReverbSpringGrpcServerProperties implements ServerBuilderCustomizer<ReverbServerBuilder>
{
    /** The prefix of Spring gRPC's server properties. */
    public static final String PREFIX = "spring.grpc.server.";
    private static final String KEEP_ALIVE = PREFIX + "keep-alive.";

    private final Binder binder;

    /**
     * @param environment where the properties are read, at each {@link #customize} (a refreshed environment counts).
     */
    public ReverbSpringGrpcServerProperties(final Environment environment)
    {
        this.binder = Binder.get(environment);
    }

    @Override
    public void customize(final ReverbServerBuilder builder)
    {
        apply(binder, builder);
    }

    /**
     * Applies the properties set in {@code binder} to any grpc-java server builder (tests use a recording one).
     *
     * @param binder  the properties.
     * @param builder the builder.
     * @param <T>     its type.
     * @throws IllegalArgumentException naming the property, if a value cannot be bound or the builder refuses it.
     */
    static <T extends ServerBuilder<T>> void apply(final Binder binder, final T builder)
    {
        duration(binder, KEEP_ALIVE + "time", nanos -> builder.keepAliveTime(nanos, TimeUnit.NANOSECONDS));
        duration(binder, KEEP_ALIVE + "timeout", nanos -> builder.keepAliveTimeout(nanos, TimeUnit.NANOSECONDS));
        duration(binder, KEEP_ALIVE + "max-idle", nanos -> builder.maxConnectionIdle(nanos, TimeUnit.NANOSECONDS));
        duration(binder, KEEP_ALIVE + "max-age", nanos -> builder.maxConnectionAge(nanos, TimeUnit.NANOSECONDS));
        duration(binder, KEEP_ALIVE + "max-age-grace",
            nanos -> builder.maxConnectionAgeGrace(nanos, TimeUnit.NANOSECONDS));
        duration(binder, KEEP_ALIVE + "permit-time", nanos -> builder.permitKeepAliveTime(nanos, TimeUnit.NANOSECONDS));
        bound(binder, KEEP_ALIVE + "permit-without-calls", Boolean.class, builder::permitKeepAliveWithoutCalls);
        size(binder, PREFIX + "max-inbound-message-size", builder::maxInboundMessageSize);
        size(binder, PREFIX + "max-inbound-metadata-size", builder::maxInboundMetadataSize);
    }

    private static void duration(final Binder binder, final String name, final Consumer<Long> setter)
    {
        // Duration.toNanos overflows past 292 years: such a value means "never", as grpc-java's builders read it
        bound(binder, name, Duration.class, value -> setter.accept(
            value.compareTo(Duration.ofNanos(Long.MAX_VALUE)) >= 0 ? Long.MAX_VALUE : value.toNanos()));
    }

    private static void size(final Binder binder, final String name, final Consumer<Integer> setter)
    {
        bound(binder, name, DataSize.class, value ->
        {
            if (value.toBytes() > Integer.MAX_VALUE)
            {
                throw new IllegalArgumentException("at most " + Integer.MAX_VALUE + " bytes: " + value);
            }
            setter.accept((int)value.toBytes());
        });
    }

    private static <V> void bound(final Binder binder, final String name, final Class<V> type, final Consumer<V> setter)
    {
        try
        {
            binder.bind(name, type).ifBound(setter);
        }
        catch (final BindException | IllegalArgumentException ex)
        {
            final Throwable cause = ex instanceof BindException && ex.getCause() != null ? ex.getCause() : ex;
            throw new IllegalArgumentException(name + ": " + cause.getMessage(), ex);
        }
    }
}
