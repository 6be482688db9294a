package io.reverb.bench.target;

import java.net.URI;

/**
 * One framework the benchmarks can drive: it serves some URI schemes, starts an echo server and
 * connects clients to it.
 */
public interface Target
{
    /**
     * @return short framework name for reports, e.g. {@code "grpc-java"} or {@code "reverb"}.
     */
    String framework();

    /**
     * @param uri a target address.
     * @return true if this framework serves the address's scheme.
     */
    boolean handles(URI uri);

    /**
     * @param uri      where to listen; an ephemeral port (0) or missing name is filled in.
     * @param settings polling mode and other knobs, applied where the framework supports them.
     * @return the started server.
     * @throws Exception if the server cannot start.
     */
    BenchServer startServer(URI uri, TargetSettings settings) throws Exception;

    /**
     * @param uri      the server's address, as {@link BenchServer#uri()} returned it.
     * @param settings polling mode and other knobs, applied where the framework supports them.
     * @return a connected client.
     * @throws Exception if the client cannot connect.
     */
    EchoClient connect(URI uri, TargetSettings settings) throws Exception;
}
