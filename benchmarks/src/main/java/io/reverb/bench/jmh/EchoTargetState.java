package io.reverb.bench.jmh;

import io.reverb.bench.target.BenchServer;
import io.reverb.bench.target.EchoClient;
import io.reverb.bench.target.Target;
import io.reverb.bench.target.TargetSettings;
import io.reverb.bench.target.Targets;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

import java.net.URI;

/**
 * A server and a connected client of one target, for the whole trial.
 */
@State(Scope.Benchmark)
public class EchoTargetState
{
    /** Which framework and transport; see {@link JmhTargets#ALL}. */
    @Param({"reverb-shm-adaptive", "reverb-shm-busy", "reverb-shm-event", "reverb-inproc", "grpc-netty", "grpc-inproc"})
    public String target;

    /** The server, in this JVM. */
    public BenchServer server;
    /** The client. */
    public EchoClient client;

    /**
     * Starts the server and connects.
     *
     * @throws Exception if the target cannot run here (e.g. its transport is not available).
     */
    @Setup(Level.Trial)
    public void start() throws Exception
    {
        final URI uri = JmhTargets.uri(target);
        final TargetSettings settings = JmhTargets.settings(target);
        final Target framework = Targets.forUri(uri);
        server = framework.startServer(uri, settings);
        client = framework.connect(URI.create(server.uri()), settings);
    }

    /**
     * Closes client and server.
     */
    @TearDown(Level.Trial)
    public void stop()
    {
        if (client != null)
        {
            client.close();
        }
        if (server != null)
        {
            server.close();
        }
    }
}
