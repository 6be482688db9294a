package io.reverb.rdma.verbs;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The far side of the conformance suite's cross-process tests, run in a child JVM:
 * {@code ConformancePeer <provider> <mode> <address>}. Settings come from system properties
 * ({@link VerbsConfig#defaults()}). It talks to the parent through stdin/stdout lines.
 *
 * <ul>
 *   <li>{@code connect-and-hold}: connects, posts receives, prints {@code READY}; on the line
 *       {@code SEND} sends one 8-byte message; then waits to be killed.</li>
 *   <li>{@code echo}: listens, prints {@code READY}, accepts one connection whose accept private data
 *       carries (address, rkey) of a 16 MiB region open to remote read and write; echoes every
 *       received message back with the same immediate; exits 0 when the connection goes down.</li>
 * </ul>
 */
public final class ConformancePeer
{
    private static final long TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(30);
    public static final int ECHO_SLOTS = 64;
    public static final int ECHO_SLOT_SIZE = 4096;
    public static final int ECHO_REGION_SIZE = 16 * 1024 * 1024;

    private ConformancePeer()
    {
    }

    public static void main(final String[] args) throws Exception
    {
        final String providerName = args[0];
        final String mode = args[1];
        final String address = args[2];
        VerbsProvider provider = null;
        for (final VerbsProvider candidate : VerbsProviders.all())
        {
            if (candidate.name().equals(providerName))
            {
                provider = candidate;
            }
        }
        if (provider == null)
        {
            throw new IllegalStateException("no provider named " + providerName);
        }
        try (VerbsContext context = provider.open(VerbsConfig.defaults()))
        {
            switch (mode)
            {
                case "connect-and-hold":
                    connectAndHold(context, address);
                    break;
                case "echo":
                    echo(context, address);
                    break;
                default:
                    throw new IllegalArgumentException("unknown mode " + mode);
            }
        }
        System.exit(0);
    }

    private static void connectAndHold(final VerbsContext context, final String address) throws Exception
    {
        final ProtectionDomain pd = context.allocPd();
        final CompletionQueue cq = context.createCq(64, null);
        final QueuePair qp = context.connect(address,
            new QueuePairAttributes().pd(pd).sendCq(cq).recvCq(cq), null);
        final MemoryRegion mr = pd.allocate(4096, Access.LOCAL_WRITE);
        final RecvRequest recv = new RecvRequest();
        for (int i = 0; i < 4; i++)
        {
            recv.wrId(i).setSge(mr, 0, 4096);
            qp.postRecv(recv);
        }
        System.out.println("READY");
        System.out.flush();
        final BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null)
        {
            if (line.equals("SEND"))
            {
                final SendRequest send = new SendRequest().wrId(99).opcode(WrOpcode.SEND).flags(SendRequest.FLAG_SIGNALED);
                send.setSge(mr, 0, 8);
                qp.postSend(send);
                System.out.println("SENT");
                System.out.flush();
            }
        }
        // Parent closed our stdin without killing us: hold until killed anyway.
        Thread.sleep(TimeUnit.NANOSECONDS.toMillis(TIMEOUT_NANOS));
    }

    private static void echo(final VerbsContext context, final String address) throws Exception
    {
        final ProtectionDomain pd = context.allocPd();
        final CompletionQueue cq = context.createCq(1024, null);
        final MemoryRegion slots = pd.allocate(ECHO_SLOTS * ECHO_SLOT_SIZE, Access.LOCAL_WRITE);
        final MemoryRegion open = pd.allocate(ECHO_REGION_SIZE, Access.ALL);
        final AtomicBoolean down = new AtomicBoolean();
        final QueuePair qp;
        try (ConnectionListener listener = context.listen(address, 4))
        {
            System.out.println("READY");
            System.out.flush();
            final ConnectionRequest request = listener.accept(TIMEOUT_NANOS);
            if (request == null)
            {
                throw new IllegalStateException("nobody connected");
            }
            final ByteBuffer privateData = ByteBuffer.allocate(12);
            privateData.putLong(0, open.address()).putInt(8, open.rkey());
            qp = request.accept(new QueuePairAttributes().pd(pd).sendCq(cq).recvCq(cq)
                .maxRecvWr(ECHO_SLOTS).maxSendWr(ECHO_SLOTS).disconnectHandler(() -> down.set(true)), privateData);
        }
        final RecvRequest recv = new RecvRequest();
        for (int i = 0; i < ECHO_SLOTS; i++)
        {
            recv.wrId(i).setSge(slots, i * ECHO_SLOT_SIZE, ECHO_SLOT_SIZE);
            qp.postRecv(recv);
        }
        final WorkCompletions wc = new WorkCompletions(32);
        final SendRequest send = new SendRequest();
        while (!down.get())
        {
            final int n = cq.poll(wc);
            for (int i = 0; i < n; i++)
            {
                if (wc.status(i) != WcStatus.SUCCESS || wc.opcode(i) == WcOpcode.SEND)
                {
                    continue;
                }
                final int slot = (int)wc.wrId(i);
                if (wc.opcode(i) == WcOpcode.RECV)
                {
                    send.reset().wrId(slot).opcode(wc.hasImm(i) ? WrOpcode.SEND_WITH_IMM : WrOpcode.SEND)
                        .immData(wc.immData(i)).flags(0);
                    send.setSge(slots, slot * ECHO_SLOT_SIZE, wc.byteLen(i));
                    // Copied synchronously by the shm provider; another provider would wait for the
                    // send completion before reposting (the parent paces with one message in flight).
                    qp.postSend(send);
                }
                recv.wrId(slot).setSge(slots, slot * ECHO_SLOT_SIZE, ECHO_SLOT_SIZE);
                qp.postRecv(recv);
            }
            if (n == 0)
            {
                Thread.yield();
            }
        }
        qp.close();
    }
}
