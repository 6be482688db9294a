package io.reverb.rpc;

/**
 * The state of one connection to one address (a subchannel) or of a whole channel, as in gRPC.
 *
 * <p>A subchannel is {@link #READY} only when it can take a call now: connected, reporting SERVING to the health
 * service when health checking is on, and not draining (no GOAWAY received). A load balancer never has to look at
 * health or GOAWAY itself.
 */
public enum ConnectivityState
{
    /** Not connected and not trying; a connection is made when asked for. */
    IDLE,
    /** Connecting (or handshaking, or waiting for the first health answer). */
    CONNECTING,
    /** Can take calls. */
    READY,
    /** The last attempt failed, or the peer reported NOT_SERVING, or sent GOAWAY; reconnect pending. */
    TRANSIENT_FAILURE,
    /** Closed for good. */
    SHUTDOWN
}
