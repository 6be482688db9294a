package io.reverb.bench.stat;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.reverb.common.counters.CountersLayout;
import io.reverb.common.counters.ProcessCounters;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Attack case (bin/attack-suite, issue 38 item 4): another local user ({@code nobody}) pre-creates the victim's
 * counters directory, mode 0711 or 0755, or a symbolic link to a directory of its own, and puts there a counters file
 * it keeps live (locked). Held when the victim's process keeps its counters in memory with a warning naming the owner
 * (never writes into that directory), and the victim's reverb-stat refuses the directory (exit 3, naming the owner or
 * the link) and prints none of the attacker's files. Needs root (to create files of another uid).
 */
class CountersDirectoryPreCreatedAttack
{
    private static final int NOBODY = 65534;

    @TempDir
    Path tmp;
    private Path victimDir;
    private Path attackerFile;
    private FileChannel attackerChannel;
    private FileLock attackerLock;

    @BeforeEach
    void setUp() throws IOException
    {
        assumeTrue(LocalUserAttackSupport.root(), "needs root to create a directory owned by another uid (nobody)");
        assumeTrue(ProcessCounters.current() == null, "another test holds this JVM's counters");
        Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("rwxr-xr-x"));
        victimDir = tmp.resolve("reverb-stat-victim");
        System.setProperty(ProcessCounters.DIR_PROPERTY, victimDir.toString());
    }

    @AfterEach
    void tearDown() throws IOException
    {
        System.clearProperty(ProcessCounters.DIR_PROPERTY);
        if (attackerLock != null)
        {
            attackerLock.release();
            attackerChannel.close();
        }
    }

    /** The attacker's directory with one live-looking counters file of its own in it, owned by nobody. */
    private Path attackerDirectory(final Path dir, final String mode) throws IOException
    {
        Files.createDirectory(dir);
        attackerFile = dir.resolve(CountersLayout.FILE_PREFIX + "4242-attacker" + CountersLayout.FILE_SUFFIX);
        final byte[] image = new byte[CountersLayout.HEADER_LENGTH + 640];
        final ByteBuffer header = ByteBuffer.wrap(image).order(ByteOrder.nativeOrder());
        header.putInt(CountersLayout.MAGIC_OFFSET, CountersLayout.MAGIC).putInt(CountersLayout.VERSION_OFFSET, 1)
            .putLong(CountersLayout.PID_OFFSET, 4242).putInt(CountersLayout.METADATA_LENGTH_OFFSET, 512)
            .putInt(CountersLayout.VALUES_LENGTH_OFFSET, 128).putInt(CountersLayout.COMMAND_LENGTH_OFFSET, 8);
        System.arraycopy("ATTACKER".getBytes(StandardCharsets.US_ASCII), 0, image,
            CountersLayout.COMMAND_OFFSET, 8);
        Files.write(attackerFile, image);
        Files.setAttribute(attackerFile, "unix:uid", NOBODY);
        Files.setAttribute(dir, "unix:uid", NOBODY);
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString(mode));
        // "live": its lock is held (here, by this JVM, which reverb-stat then reads without probing)
        attackerChannel = FileChannel.open(attackerFile, StandardOpenOption.READ, StandardOpenOption.WRITE);
        attackerLock = attackerChannel.lock();
        return dir;
    }

    private void assertHeld(final String expectedInWarning) throws IOException
    {
        try (LocalUserAttackSupport.CountersLog log = new LocalUserAttackSupport.CountersLog())
        {
            final ProcessCounters counters = ProcessCounters.acquire();
            try
            {
                assertThat(counters.file()).as("the victim's counters file, never in the attacker's directory").isNull();
                assertThat(log.all()).as("the warning names the owner").contains(expectedInWarning);
                assertThat(log.warnings()).as("one warning at most").isLessThanOrEqualTo(1);
            }
            finally
            {
                counters.release();
            }
        }
        try (Stream<Path> files = Files.list(victimDir.toRealPath()))
        {
            assertThat(files).as("nothing written into the attacker's directory").containsExactly(attackerFile);
        }
        final StringWriter out = new StringWriter();
        final StringWriter err = new StringWriter();
        final int code = ReverbStat.run(new String[] {"--dir", victimDir.toString()}, new PrintWriter(out),
            new PrintWriter(err));
        assertThat(code).as("reverb-stat refuses the directory: " + err).isEqualTo(ReverbStat.UNREADABLE);
        assertThat(err.toString()).contains(expectedInWarning);
        assertThat(out.toString()).as("none of the attacker's files shown").doesNotContain("ATTACKER", "4242");
    }

    @Test
    void preCreatedDirectoryMode0711() throws IOException
    {
        attackerDirectory(victimDir, "rwx--x--x");
        assertHeld("owned by nobody");
    }

    @Test
    void preCreatedDirectoryMode0755() throws IOException
    {
        attackerDirectory(victimDir, "rwxr-xr-x");
        assertHeld("owned by nobody");
    }

    @Test
    void preCreatedSymbolicLink() throws IOException
    {
        final Path real = attackerDirectory(tmp.resolve("attacker-real"), "rwxr-xr-x");
        Files.createSymbolicLink(victimDir, real);
        assertHeld("is a symbolic link");
    }
}
