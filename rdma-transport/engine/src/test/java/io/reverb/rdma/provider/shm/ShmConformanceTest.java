package io.reverb.rdma.provider.shm;

import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.rdma.verbs.AbstractVerbsProviderConformanceTest;
import io.reverb.rdma.verbs.VerbsConfig;
import io.reverb.rdma.verbs.VerbsProvider;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;

/**
 * The conformance suite against the shm provider, with both contexts in this JVM (the peer-death
 * test runs its peer in a child JVM). Uses a private directory and checks after every test that the
 * provider removed every file it created.
 */
class ShmConformanceTest extends AbstractVerbsProviderConformanceTest
{
    private static final AtomicInteger ADDRESSES = new AtomicInteger();
    private final Path directory = ShmTestDirectories.newDirectory("conf");

    @Override
    protected VerbsProvider provider()
    {
        return new ShmVerbsProvider();
    }

    @Override
    protected String newAddress()
    {
        return "t" + ADDRESSES.incrementAndGet();
    }

    @Override
    protected VerbsConfig config()
    {
        return VerbsConfig.defaults().withShmDirectory(directory);
    }

    @Override
    protected List<String> childJvmArguments()
    {
        return List.of("-D" + VerbsConfig.SHM_DIR_PROP + "=" + directory);
    }

    @Override
    protected void assertNothingLeaked() throws IOException
    {
        try (Stream<Path> files = Files.list(directory))
        {
            assertThat(files.map(p -> p.getFileName().toString()).collect(Collectors.toList()))
                .as("files left in " + directory).isEmpty();
        }
    }

    @AfterAll
    void removeDirectory() throws IOException
    {
        ShmTestDirectories.delete(directory);
    }
}
