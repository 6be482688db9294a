package io.reverb.grpc;

import io.grpc.Server;
import io.reverb.grpc.EndRecordingServices.Handler;
import io.reverb.grpc.EndRecordingServices.Recorder;
import io.reverb.rpc.RpcServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Issue 25's property when the client cannot tell the server anything: a client in another JVM starts one call of
 * each shape ({@link CallerMain}) and is then frozen with SIGSTOP (its connection stays up, no CANCEL ever comes: only
 * the server's own deadline can end the calls) or killed with SIGKILL (no deadline: the lost connection ends them).
 * Every server handler, grpc-java's or native, must learn of the end of its call, as cancelled.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class CallerGoneTest
{
    /**
     * Long enough for the caller to send its calls (a loaded machine may take a second or more to load the classes
     * of its first streaming calls: a call whose deadline passed before it was sent never reaches the server) and to
     * be frozen before its own timer fires; short for the test.
     */
    private static final int DEADLINE_MILLIS = 4000;

    private Process child;
    private AutoCloseable server;
    private String address;

    @AfterEach
    void stop() throws Exception
    {
        if (child != null)
        {
            child.destroyForcibly();
            assertThat(child.waitFor(30, TimeUnit.SECONDS)).isTrue();
        }
        if (server != null)
        {
            server.close();
        }
        if (address != null)
        {
            AbstractReverbConformanceTest.assertReleased(address);
        }
    }

    @ParameterizedTest(name = "{0}: {2} caller -> {1} service, caller {3}")
    @CsvSource({
        "shm, grpc, grpc, frozen", "shm, grpc, native, frozen", "shm, native, grpc, frozen", "shm, native, native, frozen",
        "tcp, grpc, grpc, frozen", "tcp, grpc, native, frozen", "tcp, native, grpc, frozen", "tcp, native, native, frozen",
        "shm, grpc, grpc, killed", "shm, native, native, killed",
        "tcp, grpc, grpc, killed", "tcp, native, native, killed",
    })
    void serverHandlerShouldLearnOfTheEndWhenTheCallerIsGone(
        final String transport, final String serverKind, final String callerKind, final String fate) throws Exception
    {
        address = "shm".equals(transport) ? "shm://grpc-gone-" + ProcessHandle.current().pid() : "tcp://127.0.0.1:0";
        final Recorder recorder;
        final String target;
        if ("grpc".equals(serverKind))
        {
            final EndRecordingServices.Grpc service = new EndRecordingServices.Grpc();
            recorder = service.recorder;
            final Server grpc = ReverbServerBuilder.forAddress(address).addService(service).build().start();
            server = () ->
            {
                grpc.shutdownNow();
                assertThat(grpc.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
            };
            target = grpc.getListenSockets().get(0).toString();
        }
        else
        {
            final EndRecordingServices.Native service = new EndRecordingServices.Native();
            recorder = service.recorder;
            final RpcServer reverb = RpcServer.builder(address).addService(service).build().start();
            server = reverb;
            target = reverb.address();
        }
        final boolean frozen = "frozen".equals(fate);
        startCaller(target, callerKind, frozen ? DEADLINE_MILLIS : 0);
        final boolean allStarted = recorder.awaitStarted(4);
        assertThat(allStarted).as("the four calls reached their handlers (%d did)", recorder.started()).isTrue();
        if (frozen)
        {
            final Process stop = new ProcessBuilder("kill", "-STOP", Long.toString(child.pid())).inheritIO().start();
            assertThat(stop.waitFor()).as("kill -STOP").isZero();
        }
        else
        {
            child.destroyForcibly(); // SIGKILL
            assertThat(child.waitFor(30, TimeUnit.SECONDS)).isTrue();
        }
        final List<Handler> handlers = recorder.awaitEnded();
        assertThat(handlers).hasSize(4);
        assertThat(handlers).as("every handler learned of the end of its call, as cancelled")
            .allMatch(h -> h.cancelled && !h.completed);
        assertThat(handlers).as("every handler's context was cancelled").allMatch(h -> h.contextCancelled);
    }

    private void startCaller(final String target, final String kind, final int deadlineMillis) throws Exception
    {
        child = new ProcessBuilder(
            Paths.get(System.getProperty("java.home"), "bin", "java").toString(),
            "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
            "-Xmx256m",
            "-cp", System.getProperty("java.class.path"),
            CallerMain.class.getName(), target, kind, Integer.toString(deadlineMillis))
            .redirectError(ProcessBuilder.Redirect.INHERIT)
            .start();
        final BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
        assertThat(out.readLine()).as("caller process started its calls").isEqualTo("CALLED");
    }
}
