package io.reverb.rpc.internal;

import io.reverb.rpc.Metadata;
import io.reverb.rpc.RpcException;
import io.reverb.rpc.Status;

import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;

/**
 * Lets a native handler end its call with grpc-java's {@code io.grpc.StatusRuntimeException} or
 * {@code io.grpc.StatusException}, as code moved over from grpc-java does: the client then sees that status code,
 * description and trailers instead of UNKNOWN.
 *
 * <p>rpc-core does not depend on grpc-java: the classes are looked up reflectively, once, in the class loader that
 * loaded rpc-core. Without grpc-api on the class path, {@link #translate} returns its argument unchanged.
 *
 * <p>Internal: public for rpc-core's observation interceptor, which records the status the call ended with.
 */
public final class GrpcStatusExceptions
{
    private static final Bridge BRIDGE = Bridge.load();

    private GrpcStatusExceptions()
    {
    }

    /**
     * @param t what a handler failed with.
     * @return an {@link RpcException} with the grpc status and trailers if t (or a cause) is a grpc status exception,
     * else t itself.
     */
    public static Throwable translate(final Throwable t)
    {
        if (BRIDGE == null || t instanceof RpcException)
        {
            return t;
        }
        Throwable current = t;
        for (int depth = 0; current != null && depth < 16; depth++, current = current.getCause())
        {
            if (current instanceof RpcException)
            {
                return current;
            }
            final RpcException translated = BRIDGE.toRpcException(current);
            if (translated != null)
            {
                return translated;
            }
        }
        return t;
    }

    /** The reflective handles, present only when grpc-api is on the class path. */
    private static final class Bridge
    {
        private final Class<?> statusRuntimeException;
        private final Class<?> statusException;
        private final Method sreStatus;
        private final Method sreTrailers;
        private final Method seStatus;
        private final Method seTrailers;
        private final Method statusCode;
        private final Method statusDescription;
        private final Method codeValue;
        private final Method serializeMetadata;

        private Bridge(final ClassLoader loader) throws ReflectiveOperationException
        {
            statusRuntimeException = Class.forName("io.grpc.StatusRuntimeException", false, loader);
            statusException = Class.forName("io.grpc.StatusException", false, loader);
            final Class<?> status = Class.forName("io.grpc.Status", false, loader);
            final Class<?> metadata = Class.forName("io.grpc.Metadata", false, loader);
            sreStatus = statusRuntimeException.getMethod("getStatus");
            sreTrailers = statusRuntimeException.getMethod("getTrailers");
            seStatus = statusException.getMethod("getStatus");
            seTrailers = statusException.getMethod("getTrailers");
            statusCode = status.getMethod("getCode");
            statusDescription = status.getMethod("getDescription");
            codeValue = Class.forName("io.grpc.Status$Code", false, loader).getMethod("value");
            serializeMetadata = Class.forName("io.grpc.InternalMetadata", false, loader).getMethod("serialize", metadata);
        }

        static Bridge load()
        {
            try
            {
                return new Bridge(GrpcStatusExceptions.class.getClassLoader());
            }
            catch (final ReflectiveOperationException | LinkageError | SecurityException e)
            {
                return null; // grpc-api is not on the class path: nothing to translate
            }
        }

        RpcException toRpcException(final Throwable t)
        {
            final boolean runtime = statusRuntimeException.isInstance(t);
            if (!runtime && !statusException.isInstance(t))
            {
                return null;
            }
            try
            {
                final Object grpcStatus = (runtime ? sreStatus : seStatus).invoke(t);
                final int code = (Integer)codeValue.invoke(statusCode.invoke(grpcStatus));
                if (code == 0)
                {
                    return null; // an "OK" failure says nothing: UNKNOWN, as for any other exception
                }
                final String description = (String)statusDescription.invoke(grpcStatus);
                final Object grpcTrailers = (runtime ? sreTrailers : seTrailers).invoke(t);
                Metadata trailers = null;
                if (grpcTrailers != null)
                {
                    trailers = new Metadata();
                    final byte[][] pairs = (byte[][])serializeMetadata.invoke(null, grpcTrailers);
                    for (int i = 0; i + 1 < pairs.length; i += 2)
                    {
                        final String name = new String(pairs[i], StandardCharsets.US_ASCII);
                        if (!name.startsWith("grpc-"))
                        {
                            trailers.putRaw(name, pairs[i + 1]);
                        }
                    }
                }
                Status status = Status.fromCodeValue(code).withCause(t);
                if (description != null)
                {
                    status = status.withDescription(description);
                }
                return new RpcException(status, trailers);
            }
            catch (final ReflectiveOperationException | RuntimeException e)
            {
                return null; // an incompatible grpc-api: fall back to UNKNOWN as for any other exception
            }
        }
    }
}
