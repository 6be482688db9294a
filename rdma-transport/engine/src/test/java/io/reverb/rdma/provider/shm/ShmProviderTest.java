package io.reverb.rdma.provider.shm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.management.ThreadMXBean;
import io.reverb.rdma.verbs.Access;
import io.reverb.rdma.verbs.CompletionQueue;
import io.reverb.rdma.verbs.ConnectionListener;
import io.reverb.rdma.verbs.ConnectionRequest;
import io.reverb.rdma.verbs.MemoryRegion;
import io.reverb.rdma.verbs.PostResult;
import io.reverb.rdma.verbs.ProtectionDomain;
import io.reverb.rdma.verbs.QueuePair;
import io.reverb.rdma.verbs.QueuePairAttributes;
import io.reverb.rdma.verbs.RecvRequest;
import io.reverb.rdma.verbs.SendRequest;
import io.reverb.rdma.verbs.VerbsConfig;
import io.reverb.rdma.verbs.VerbsContext;
import io.reverb.rdma.verbs.VerbsProviders;
import io.reverb.rdma.verbs.WcOpcode;
import io.reverb.rdma.verbs.WcStatus;
import io.reverb.rdma.verbs.WorkCompletions;
import io.reverb.rdma.verbs.WrOpcode;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What is particular to the shm provider: its files, their permissions and clean-up, discovery, and
 * allocation-free posting and polling.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ShmProviderTest
{
    private static final AtomicInteger NAMES = new AtomicInteger();
    private final Path directory = ShmTestDirectories.newDirectory("prov" + NAMES.incrementAndGet());
    private final VerbsConfig config = VerbsConfig.defaults().withShmDirectory(directory);

    @AfterEach
    void removeDirectory() throws IOException
    {
        ShmTestDirectories.delete(directory);
    }

    @Test
    void shouldBeFoundByServiceLoaderForTheShmScheme()
    {
        assertThat(VerbsProviders.forScheme("shm")).isInstanceOf(ShmVerbsProvider.class);
        assertThat(new ShmVerbsProvider().isAvailable()).isTrue();
        assertThat(new ShmVerbsProvider().unavailabilityCause()).isNull();
    }

    /**
     * A CQ that is no QP's receive CQ is polled without its access guard while nothing was offered since the last poll
     * emptied it: completions offered from several threads while one polls must all arrive, once each, and the CQ
     * must read empty after. Counted, not timed.
     */
    @Test
    @Timeout(60)
    void aCqWithoutReceiversShouldDeliverEveryLocalCompletionOnce() throws Exception
    {
        final int producers = 2;
        final int each = 20_000;
        try (VerbsContext context = new ShmVerbsProvider().open(config))
        {
            final ShmCompletionQueue cq = (ShmCompletionQueue)context.createCq(1024, null);
            final AtomicLong polled = new AtomicLong();
            final AtomicLong lost = new AtomicLong();
            final Thread[] threads = new Thread[producers];
            for (int t = 0; t < producers; t++)
            {
                final int producer = t;
                threads[t] = new Thread(() ->
                {
                    for (int i = 0; i < each; i++)
                    {
                        while (producer * (long)each + i - polled.get() > 256 * producers)
                        {
                            Thread.onSpinWait(); // keeps the ring from overflowing
                        }
                        if (!cq.offer(producer * (long)each + i, WcStatus.SUCCESS, WcOpcode.SEND, 0, 0, 0, 1))
                        {
                            lost.incrementAndGet();
                        }
                    }
                });
                threads[t].start();
            }
            final boolean[] seen = new boolean[producers * each];
            final WorkCompletions wc = new WorkCompletions(16);
            int received = 0;
            while (received < producers * each && lost.get() == 0)
            {
                final int n = cq.poll(wc);
                for (int i = 0; i < n; i++)
                {
                    final int id = (int)wc.wrId(i);
                    assertThat(seen[id]).as("completion %d delivered twice", id).isFalse();
                    seen[id] = true;
                }
                received += n;
                polled.addAndGet(n);
            }
            for (final Thread thread : threads)
            {
                thread.join();
            }
            assertThat(lost.get()).as("offers that overflowed the ring").isZero();
            assertThat(received).isEqualTo(producers * each);
            assertThat(cq.poll(wc)).as("nothing left").isZero();
            assertThat(cq.offer(7, WcStatus.SUCCESS, WcOpcode.SEND, 0, 0, 0, 1)).isTrue();
            assertThat(cq.poll(wc)).as("an offer after an empty poll").isEqualTo(1);
            assertThat(wc.wrId(0)).isEqualTo(7);
        }
    }

    @Test
    void shouldKeepItsFilesPrivateToTheUserAndRemoveThemOnClose() throws Exception
    {
        final Path fresh = directory.resolve("sub");
        try (VerbsContext context = new ShmVerbsProvider().open(config.withShmDirectory(fresh)))
        {
            final ProtectionDomain pd = context.allocPd();
            pd.allocate(4096, Access.ALL);
            context.createCq(16, null);
            context.listen("perm", 1);

            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(fresh))).isEqualTo("rwx------");
            final List<Path> files = list(fresh);
            assertThat(files).hasSizeGreaterThanOrEqualTo(3);
            for (final Path file : files)
            {
                if (!file.getFileName().toString().endsWith(ShmFiles.SOCKET_SUFFIX))
                {
                    assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file)))
                        .as(file.toString()).isEqualTo("rw-------");
                }
            }
        }
        assertThat(list(fresh)).as("closing the context removes everything").isEmpty();
    }

    @Test
    void shouldDeleteFilesOfDeadProcessesWhenAContextOpens() throws Exception
    {
        // A dead context: its lock file exists, and nobody holds the lock.
        final Path stale = directory.resolve("r0123456789abcdef-mr1");
        final Path staleCq = directory.resolve("r0123456789abcdef-cq1");
        final Path staleLock = directory.resolve("r0123456789abcdef" + ShmFiles.LOCK_SUFFIX);
        Files.write(stale, new byte[128]);
        Files.write(staleCq, new byte[128]);
        Files.write(staleLock, new byte[0]);
        final Path foreign = directory.resolve("not-ours.txt");
        Files.write(foreign, new byte[1]);

        try (VerbsContext context = new ShmVerbsProvider().open(config))
        {
            assertThat(stale).doesNotExist();
            assertThat(staleCq).doesNotExist();
            assertThat(staleLock).doesNotExist();
            assertThat(foreign).as("files that are not ours are left alone").exists();
            context.allocPd().allocate(64, Access.LOCAL_WRITE);
        }
        Files.delete(foreign);
        assertThat(list(directory)).isEmpty();
    }

    @Test
    void shouldEndAnAcceptWithoutTimeLimitWhenTheListenerCloses() throws Exception
    {
        // The engine's accept thread waits with no time limit while nothing is being authenticated: close() ends it.
        try (VerbsContext context = new ShmVerbsProvider().open(config))
        {
            final ConnectionListener listener = context.listen("untimed", 1);
            final CompletableFuture<Throwable> outcome = new CompletableFuture<>();
            final Thread acceptor = new Thread(() ->
            {
                try
                {
                    listener.accept(Long.MAX_VALUE);
                    outcome.complete(null);
                }
                catch (final Throwable t)
                {
                    outcome.complete(t);
                }
            }, "untimed-acceptor");
            acceptor.start();
            while (acceptor.getState() != Thread.State.WAITING && !outcome.isDone())
            {
                Thread.sleep(1); // until it parks without a time limit
            }
            listener.close();
            assertThat(outcome.get(60, TimeUnit.SECONDS)).as("accept ended by close()").isInstanceOf(IOException.class)
                .hasMessageContaining("closed");
        }
    }

    @Test
    void shouldReplaceAListenSocketNobodyAnswers() throws Exception
    {
        // A crashed listener leaves its socket file behind; binding a channel and closing it does the same.
        final Path socket = directory.resolve("stale" + ShmFiles.SOCKET_SUFFIX);
        try (ServerSocketChannel dead = ServerSocketChannel.open(StandardProtocolFamily.UNIX))
        {
            dead.bind(UnixDomainSocketAddress.of(socket));
        }
        assertThat(socket).exists();
        try (VerbsContext context = new ShmVerbsProvider().open(config);
            ConnectionListener listener = context.listen("stale", 1))
        {
            assertThat(listener.localAddress()).isEqualTo("stale");
        }
        assertThat(list(directory)).isEmpty();
    }

    @Test
    void shouldDeleteOldListenSocketsNobodyAnswersWhenAContextOpens() throws Exception
    {
        final Path old = directory.resolve("crashed" + ShmFiles.SOCKET_SUFFIX);
        final Path young = directory.resolve("binding" + ShmFiles.SOCKET_SUFFIX);
        for (final Path socket : new Path[] {old, young})
        {
            try (ServerSocketChannel dead = ServerSocketChannel.open(StandardProtocolFamily.UNIX))
            {
                dead.bind(UnixDomainSocketAddress.of(socket));
            }
        }
        Files.setLastModifiedTime(old, FileTime.fromMillis(System.currentTimeMillis() - 10 * ShmFiles.STALE_SOCKET_AGE_MILLIS));

        try (VerbsContext context = new ShmVerbsProvider().open(config);
            ConnectionListener live = context.listen("live", 1))
        {
            Files.setLastModifiedTime(directory.resolve("live" + ShmFiles.SOCKET_SUFFIX),
                FileTime.fromMillis(System.currentTimeMillis() - 10 * ShmFiles.STALE_SOCKET_AGE_MILLIS));
            try (VerbsContext another = new ShmVerbsProvider().open(config))
            {
                assertThat(old).as("old and silent: left by a dead listener").doesNotExist();
                assertThat(young).as("young: could be a listener between bind and listen").exists();
                assertThat(directory.resolve("live" + ShmFiles.SOCKET_SUFFIX)).as("answers").exists();
            }
        }
        Files.delete(young);
        assertThat(list(directory)).isEmpty();
    }

    /**
     * A server shutting down while its replacement takes its name (issue 25's fault suite, graceful shutdown over
     * shm): the old listener's close deleted the socket path whoever's file it named by then, so the replacement
     * became unreachable ("no shm listener named ...") although it listened.
     */
    @Test
    void shouldLeaveTheSocketOfAListenerThatTookTheNameWhenTheOldOneCloses() throws Exception
    {
        final Path socket = directory.resolve("handover" + ShmFiles.SOCKET_SUFFIX);
        try (VerbsContext old = new ShmVerbsProvider().open(config);
            VerbsContext replacement = new ShmVerbsProvider().open(config))
        {
            final ConnectionListener leaving = old.listen("handover", 1);
            // the replacement takes the name as soon as the old file is gone, while the old listener still closes
            Files.delete(socket);
            try (ConnectionListener taking = replacement.listen("handover", 1))
            {
                leaving.close();
                assertThat(socket).as("the replacement's socket").exists();
                assertThat(ShmFiles.isAnswering(socket)).isTrue();
            }
        }
        assertThat(list(directory)).isEmpty();
    }

    @Test
    void shouldRefuseToListenOnANameThatIsInUse() throws Exception
    {
        try (VerbsContext context = new ShmVerbsProvider().open(config);
            ConnectionListener listener = context.listen("busy", 1))
        {
            assertThatThrownBy(() -> context.listen("shm://busy", 1)).isInstanceOf(IOException.class)
                .hasMessageContaining("in use");
            assertThat(listener.localAddress()).isEqualTo("busy");
        }
    }

    @Test
    void shouldRejectAddressesThatAreNotPlainNames() throws Exception
    {
        try (VerbsContext context = new ShmVerbsProvider().open(config))
        {
            assertThatThrownBy(() -> context.listen("../escape", 1)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> context.listen("", 1)).isInstanceOf(IllegalArgumentException.class);
        }
    }

    @Test
    void shouldRemoveFilesOnCleanExitOfAProcessThatNeverClosedItsContext() throws Exception
    {
        final Process child = new ProcessBuilder(
            Paths.get(System.getProperty("java.home"), "bin", "java").toString(),
            "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
            "-Xmx64m", "-XX:TieredStopAtLevel=1",
            "-D" + VerbsConfig.SHM_DIR_PROP + "=" + directory,
            "-cp", System.getProperty("java.class.path"),
            ShmExitWithoutClose.class.getName(), "exiting")
            .redirectError(ProcessBuilder.Redirect.INHERIT)
            .start();
        try
        {
            final BufferedReader out = new BufferedReader(
                new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
            assertThat(out.readLine()).isEqualTo("READY");
            assertThat(child.waitFor(30, TimeUnit.SECONDS)).isTrue();
            assertThat(child.exitValue()).isZero();
        }
        finally
        {
            child.destroyForcibly();
        }
        assertThat(list(directory)).as("the shutdown hook removed the child's files").isEmpty();
    }

    @Test
    void shouldReportQueueFullWhenMoreReceivesArePostedThanTheQueueHolds() throws Exception
    {
        try (VerbsContext server = new ShmVerbsProvider().open(config);
            VerbsContext client = new ShmVerbsProvider().open(config))
        {
            final QueuePair qp = connectPair(server, client, 4)[1];
            final MemoryRegion mr = qp.pd().allocate(64, Access.LOCAL_WRITE);
            final RecvRequest recv = new RecvRequest();
            recv.setSge(mr, 0, 64);
            for (int i = 0; i < 4; i++)
            {
                assertThat(qp.postRecv(recv.wrId(i))).isEqualTo(PostResult.OK);
            }
            assertThat(qp.postRecv(recv.wrId(5))).isEqualTo(PostResult.QUEUE_FULL);
            recv.addSge(mr.address(), 1, mr.lkey());
            assertThat(qp.postRecv(recv)).as("more SGEs than maxSge").isEqualTo(PostResult.INVALID);
            qp.close();
            assertThat(qp.postRecv(recv)).isEqualTo(PostResult.CLOSED);
        }
        assertThat(list(directory)).isEmpty();
    }

    @Test
    void shouldAllocateNothingWhenPostingAndPollingInSteadyState() throws Exception
    {
        final ThreadMXBean threads = (ThreadMXBean)ManagementFactory.getThreadMXBean();
        try (VerbsContext server = new ShmVerbsProvider().open(config);
            VerbsContext client = new ShmVerbsProvider().open(config))
        {
            final QueuePair[] pair = connectPair(server, client, 16);
            final QueuePair receiver = pair[0];
            final QueuePair sender = pair[1];
            final MemoryRegion recvRegion = receiver.pd().allocate(64 * 16, Access.LOCAL_WRITE);
            final MemoryRegion target = receiver.pd().allocate(4096, Access.ALL);
            final MemoryRegion sendRegion = sender.pd().allocate(4096, Access.LOCAL_WRITE);
            final RecvRequest recv = new RecvRequest();
            for (int i = 0; i < 16; i++)
            {
                recv.wrId(i).setSge(recvRegion, i * 64, 64);
                receiver.postRecv(recv);
            }
            final SendRequest send = new SendRequest();
            final SendRequest write = new SendRequest();
            final WorkCompletions wc = new WorkCompletions(16);

            runRounds(sender, receiver, recvRegion, sendRegion, target, recv, send, write, wc, 20_000);
            final long before = threads.getThreadAllocatedBytes(Thread.currentThread().getId());
            final int failures = runRounds(sender, receiver, recvRegion, sendRegion, target, recv, send, write, wc, 20_000);
            final long allocated = threads.getThreadAllocatedBytes(Thread.currentThread().getId()) - before;

            assertThat(failures).isZero();
            // Any allocation per message would show as >= 16 bytes x 40,000 posts. The bound leaves room
            // for one-off noise of the measurement itself (the counter's own bookkeeping, a deoptimisation),
            // which was observed at 64 bytes in rare runs.
            assertThat(allocated).as("bytes allocated by 20,000 rounds of SEND + RDMA_WRITE + poll + repost")
                .isLessThan(1024);
        }
    }

    /** One round: signaled SEND, RDMA_WRITE, poll both CQs, repost the receive. @return failed completions. */
    private static int runRounds(
        final QueuePair sender,
        final QueuePair receiver,
        final MemoryRegion recvRegion,
        final MemoryRegion sendRegion,
        final MemoryRegion target,
        final RecvRequest recv,
        final SendRequest send,
        final SendRequest write,
        final WorkCompletions wc,
        final int rounds)
    {
        int failures = 0;
        final CompletionQueue senderCq = sender.sendCq();
        final CompletionQueue receiverCq = receiver.recvCq();
        for (int i = 0; i < rounds; i++)
        {
            send.reset().wrId(i).opcode(WrOpcode.SEND_WITH_IMM).immData(i).flags(SendRequest.FLAG_SIGNALED);
            send.setSge(sendRegion, 0, 64);
            sender.postSend(send);
            write.reset().wrId(i).opcode(WrOpcode.RDMA_WRITE).flags(SendRequest.FLAG_SIGNALED)
                .remoteAddress(target.address() + 128).rkey(target.rkey());
            write.setSge(sendRegion, 0, 256);
            sender.postSend(write);

            int sent = 0;
            while (sent < 2)
            {
                final int n = senderCq.poll(wc);
                for (int j = 0; j < n; j++)
                {
                    failures += wc.status(j) == WcStatus.SUCCESS ? 0 : 1;
                }
                sent += n;
            }
            int n;
            while ((n = receiverCq.poll(wc)) == 0)
            {
                Thread.onSpinWait();
            }
            for (int j = 0; j < n; j++)
            {
                failures += wc.status(j) == WcStatus.SUCCESS ? 0 : 1;
                recv.wrId(wc.wrId(j)).setSge(recvRegion, (int)wc.wrId(j) * 64, 64);
                receiver.postRecv(recv);
            }
        }
        return failures;
    }

    /** @return {server QP, client QP}, each with its own PD and a CQ shared by send and receive. */
    private static QueuePair[] connectPair(final VerbsContext server, final VerbsContext client, final int maxRecvWr)
        throws Exception
    {
        final String name = "pair" + NAMES.incrementAndGet();
        try (ConnectionListener listener = server.listen(name, 1))
        {
            final CompletableFuture<QueuePair> accepted = CompletableFuture.supplyAsync(() ->
            {
                try
                {
                    final ConnectionRequest request = listener.accept(TimeUnit.SECONDS.toNanos(20));
                    final CompletionQueue cq = server.createCq(256, null);
                    return request.accept(new QueuePairAttributes().pd(server.allocPd()).sendCq(cq).recvCq(cq)
                        .maxRecvWr(maxRecvWr), null);
                }
                catch (final IOException ex)
                {
                    throw new IllegalStateException(ex);
                }
            });
            final CompletionQueue cq = client.createCq(256, null);
            final QueuePair qp = client.connect(name, new QueuePairAttributes().pd(client.allocPd()).sendCq(cq).recvCq(cq)
                .maxRecvWr(maxRecvWr), null);
            return new QueuePair[] {accepted.get(20, TimeUnit.SECONDS), qp};
        }
    }

    private static List<Path> list(final Path dir) throws IOException
    {
        if (!Files.exists(dir))
        {
            return List.of();
        }
        try (Stream<Path> files = Files.list(dir))
        {
            return files.collect(Collectors.toList());
        }
    }
}
