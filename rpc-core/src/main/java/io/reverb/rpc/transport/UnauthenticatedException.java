package io.reverb.rpc.transport;

import java.io.IOException;

/**
 * A connection could not be set up because one side refused the other's credentials: a wrong or missing
 * authentication token, a TLS certificate that is not trusted or does not name the host, a missing client certificate
 * where mutual TLS is required, or TLS on one side only. A transport fails {@link TransportProvider#connect}'s future
 * with it (any other {@link IOException} means the peer could not be reached). Calls waiting for that connection fail
 * with {@code UNAUTHENTICATED}, not {@code UNAVAILABLE}, and are not retried as if the failure were transient; the
 * channel still connects again, after its backoff, for later calls (the configuration may have been fixed).
 */
public class UnauthenticatedException extends IOException
{
    private static final long serialVersionUID = 1L;

    /** @param message what was refused and what to change. @param cause the transport's own error, or null. */
    public UnauthenticatedException(final String message, final Throwable cause)
    {
        super(message, cause);
    }
}
