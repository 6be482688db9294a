package io.reverb.rpc.transport;

import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * Settings for a transport, given per server and per channel builder ({@code RpcServer.builder(uri)
 * .transportOptions(...)}, {@code RpcChannel.builder(uri).transportOptions(...)}) and handed to the
 * {@link TransportProvider} on connect and listen. Immutable.
 *
 * <p>rpc-core knows no transport's settings: each transport declares its own typed {@link Key}s (for the RDMA
 * engine, {@code io.reverb.rdma.rpc.EngineOptions}), and a transport ignores keys it does not know. Query parameters
 * of the address (e.g. {@code ?polling=busy}) override single fields of what these options carry; they never drop
 * the others.
 */
public final class TransportOptions
{
    /** No options: every transport uses its defaults. */
    public static final TransportOptions EMPTY = new TransportOptions(Collections.emptyMap());

    /**
     * The largest message payload the RPC layer accepts ({@code maxInboundMessageSize} of the server or channel
     * builder), set by rpc-core itself: a transport may refuse larger inbound messages before it buffers them.
     */
    public static final Key<Integer> MAX_INBOUND_MESSAGE_SIZE = Key.of("reverb.maxInboundMessageSize", Integer.class);

    private final Map<Key<?>, Object> values;

    private TransportOptions(final Map<Key<?>, Object> values)
    {
        this.values = values;
    }

    /**
     * @param key   an option.
     * @param value its value.
     * @param <T>   its type.
     * @return options holding just that value.
     */
    public static <T> TransportOptions of(final Key<T> key, final T value)
    {
        return EMPTY.with(key, value);
    }

    /**
     * @param key   an option.
     * @param value its value, or null to remove it.
     * @param <T>   its type.
     * @return a copy of these options with the value set.
     */
    public <T> TransportOptions with(final Key<T> key, final T value)
    {
        Objects.requireNonNull(key, "key");
        final Map<Key<?>, Object> copy = new IdentityHashMap<>(values);
        if (value == null)
        {
            copy.remove(key);
        }
        else
        {
            copy.put(key, key.type().cast(value));
        }
        return copy.isEmpty() ? EMPTY : new TransportOptions(Collections.unmodifiableMap(copy));
    }

    /**
     * @param key an option.
     * @param <T> its type.
     * @return its value, or null if not set.
     */
    public <T> T get(final Key<T> key)
    {
        return key.type().cast(values.get(key));
    }

    /**
     * @return true if no option is set.
     */
    public boolean isEmpty()
    {
        return values.isEmpty();
    }

    @Override
    public String toString()
    {
        final StringBuilder text = new StringBuilder("TransportOptions{");
        String separator = "";
        for (final Map.Entry<Key<?>, Object> entry : values.entrySet())
        {
            text.append(separator).append(entry.getKey().name()).append('=').append(entry.getValue());
            separator = ", ";
        }
        return text.append('}').toString();
    }

    /**
     * A typed option, declared once by the transport that reads it (keys are compared by identity).
     *
     * @param <T> the value's type.
     */
    public static final class Key<T>
    {
        private final String name;
        private final Class<T> type;

        private Key(final String name, final Class<T> type)
        {
            this.name = Objects.requireNonNull(name, "name");
            this.type = Objects.requireNonNull(type, "type");
        }

        /**
         * @param name a name for messages, e.g. {@code "reverb.engine"}.
         * @param type the value's type.
         * @param <T>  the value's type.
         * @return a new key.
         */
        public static <T> Key<T> of(final String name, final Class<T> type)
        {
            return new Key<>(name, type);
        }

        /**
         * @return the name.
         */
        public String name()
        {
            return name;
        }

        /**
         * @return the value's type.
         */
        public Class<T> type()
        {
            return type;
        }

        @Override
        public String toString()
        {
            return name;
        }
    }
}
