package io.reverb.rpc;

import java.util.Objects;

/**
 * Describes one RPC method: its full name {@code "package.Service/Method"}, its kind, and how its messages are
 * marshalled. Generated code declares one per method; immutable.
 *
 * @param <Req>  request type.
 * @param <Resp> response type.
 */
public final class MethodDescriptor<Req, Resp>
{
    /** The four kinds of call. */
    public enum MethodType
    {
        /** One request, one response. */
        UNARY,
        /** One request, a stream of responses. */
        SERVER_STREAMING,
        /** A stream of requests, one response. */
        CLIENT_STREAMING,
        /** Streams both ways. */
        BIDI_STREAMING;

        /**
         * @return true if the client sends exactly one message.
         */
        public boolean clientSendsOneMessage()
        {
            return this == UNARY || this == SERVER_STREAMING;
        }

        /**
         * @return true if the server sends exactly one message.
         */
        public boolean serverSendsOneMessage()
        {
            return this == UNARY || this == CLIENT_STREAMING;
        }
    }

    private final MethodType type;
    private final String fullMethodName;
    private final String serviceName;
    private final String methodName;
    private final Marshaller<Req> requestMarshaller;
    private final Marshaller<Resp> responseMarshaller;

    private MethodDescriptor(final Builder<Req, Resp> builder)
    {
        this.type = Objects.requireNonNull(builder.type, "type");
        this.fullMethodName = Objects.requireNonNull(builder.fullMethodName, "fullMethodName");
        final int slash = fullMethodName.lastIndexOf('/');
        if (slash <= 0 || slash == fullMethodName.length() - 1)
        {
            throw new IllegalArgumentException("full method name must be 'package.Service/Method': " + fullMethodName);
        }
        for (int i = 0; i < fullMethodName.length(); i++)
        {
            final char c = fullMethodName.charAt(i);
            if (c < 0x21 || c > 0x7E)
            {
                throw new IllegalArgumentException("full method name must be printable ASCII: " + fullMethodName);
            }
        }
        this.serviceName = fullMethodName.substring(0, slash);
        this.methodName = fullMethodName.substring(slash + 1);
        this.requestMarshaller = Objects.requireNonNull(builder.requestMarshaller, "requestMarshaller");
        this.responseMarshaller = Objects.requireNonNull(builder.responseMarshaller, "responseMarshaller");
    }

    /**
     * @param <Req>  request type.
     * @param <Resp> response type.
     * @return a new builder.
     */
    public static <Req, Resp> Builder<Req, Resp> newBuilder()
    {
        return new Builder<>();
    }

    /**
     * @param serviceName fully qualified service name, e.g. {@code "helloworld.Greeter"}.
     * @param methodName  method name, e.g. {@code "SayHello"}.
     * @return {@code "helloworld.Greeter/SayHello"}.
     */
    public static String generateFullMethodName(final String serviceName, final String methodName)
    {
        return Objects.requireNonNull(serviceName, "serviceName") + "/" + Objects.requireNonNull(methodName, "methodName");
    }

    /**
     * @return {@code "package.Service/Method"}.
     */
    public String fullMethodName()
    {
        return fullMethodName;
    }

    /**
     * @return {@code "package.Service"}.
     */
    public String serviceName()
    {
        return serviceName;
    }

    /**
     * @return {@code "Method"}.
     */
    public String methodName()
    {
        return methodName;
    }

    /**
     * @return the kind of call.
     */
    public MethodType type()
    {
        return type;
    }

    /**
     * @return request marshaller.
     */
    public Marshaller<Req> requestMarshaller()
    {
        return requestMarshaller;
    }

    /**
     * @return response marshaller.
     */
    public Marshaller<Resp> responseMarshaller()
    {
        return responseMarshaller;
    }

    /**
     * @return a builder initialised from this descriptor.
     */
    public Builder<Req, Resp> toBuilder()
    {
        return new Builder<Req, Resp>()
            .type(type)
            .fullMethodName(fullMethodName)
            .requestMarshaller(requestMarshaller)
            .responseMarshaller(responseMarshaller);
    }

    @Override
    public String toString()
    {
        return "MethodDescriptor{" + fullMethodName + ", " + type + "}";
    }

    /**
     * Builds a {@link MethodDescriptor}.
     *
     * @param <Req>  request type.
     * @param <Resp> response type.
     */
    public static final class Builder<Req, Resp>
    {
        private MethodType type;
        private String fullMethodName;
        private Marshaller<Req> requestMarshaller;
        private Marshaller<Resp> responseMarshaller;

        private Builder()
        {
        }

        /**
         * @param type the kind of call.
         * @return this.
         */
        public Builder<Req, Resp> type(final MethodType type)
        {
            this.type = type;
            return this;
        }

        /**
         * @param fullMethodName {@code "package.Service/Method"}.
         * @return this.
         */
        public Builder<Req, Resp> fullMethodName(final String fullMethodName)
        {
            this.fullMethodName = fullMethodName;
            return this;
        }

        /**
         * @param marshaller request marshaller.
         * @return this.
         */
        public Builder<Req, Resp> requestMarshaller(final Marshaller<Req> marshaller)
        {
            this.requestMarshaller = marshaller;
            return this;
        }

        /**
         * @param marshaller response marshaller.
         * @return this.
         */
        public Builder<Req, Resp> responseMarshaller(final Marshaller<Resp> marshaller)
        {
            this.responseMarshaller = marshaller;
            return this;
        }

        /**
         * @return the descriptor.
         * @throws IllegalArgumentException or NullPointerException if a field is missing or malformed.
         */
        public MethodDescriptor<Req, Resp> build()
        {
            return new MethodDescriptor<>(this);
        }
    }
}
