package io.reverb.rdma.verbs;

import java.io.IOException;

/**
 * A connection was refused below the engine for want of trust, not for a network failure: a TLS certificate was
 * not trusted or did not name the host, a mutual-TLS client had no certificate, or only one side uses TLS.
 * Retrying will not help until the configuration changes (the RPC layer reports it as UNAUTHENTICATED).
 */
public class PeerAuthenticationException extends IOException
{
    private static final long serialVersionUID = 1L;

    /** @param message what was refused and what to change. @param cause the TLS error, or null. */
    public PeerAuthenticationException(final String message, final Throwable cause)
    {
        super(message, cause);
    }
}
