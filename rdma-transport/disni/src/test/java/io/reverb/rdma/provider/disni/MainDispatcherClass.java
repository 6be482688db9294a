package io.reverb.rdma.provider.disni;

import com.ibm.disni.verbs.RdmaProvider;
import io.reverb.rdma.provider.disni.nativelib.NativeLibrary;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URL;

/**
 * Test helper: a {@code com.ibm.disni.verbs.impl.NativeDispatcher} read from the main classes (Reverb's) or from
 * the DiSNi jar (DiSNi's), defined in a class loader of its own, since on the test class path the name belongs to
 * the test-scope shadow of the emulated device.
 */
public final class MainDispatcherClass
{
    /** The class name DiSNi's Java half calls. */
    public static final String NAME = "com.ibm.disni.verbs.impl.NativeDispatcher";

    private MainDispatcherClass()
    {
    }

    /** @return Reverb's class, not initialised (its native half is not loaded). */
    static Class<?> reverbs()
    {
        return define(NativeLibrary.class, false);
    }

    /** @return DiSNi 2.1's class, not initialised (it would look for libdisni). */
    static Class<?> disnis()
    {
        return define(RdmaProvider.class, false);
    }

    /**
     * @param besides    a class from the jar or directory to read the class from.
     * @param initialise whether to run its static initialiser (Reverb's loads the native half into this loader).
     * @return the class, in a new loader.
     */
    public static Class<?> define(final Class<?> besides, final boolean initialise)
    {
        final byte[] bytes = read(besides);
        final ClassLoader loader = new ClassLoader(MainDispatcherClass.class.getClassLoader())
        {
            @Override
            protected Class<?> loadClass(final String name, final boolean resolve) throws ClassNotFoundException
            {
                if (!NAME.equals(name))
                {
                    return super.loadClass(name, resolve);
                }
                synchronized (getClassLoadingLock(name))
                {
                    final Class<?> loaded = findLoadedClass(name);
                    return loaded != null ? loaded : defineClass(name, bytes, 0, bytes.length);
                }
            }
        };
        try
        {
            return Class.forName(NAME, initialise, loader);
        }
        catch (final ClassNotFoundException ex)
        {
            throw new IllegalStateException(ex);
        }
    }

    private static byte[] read(final Class<?> besides)
    {
        final URL location = besides.getProtectionDomain().getCodeSource().getLocation();
        final String path = NAME.replace('.', '/') + ".class";
        try
        {
            final URL entry = location.getPath().endsWith(".jar") ? new URL("jar:" + location + "!/" + path) :
                new URL(location, path);
            try (InputStream in = entry.openStream())
            {
                return in.readAllBytes();
            }
        }
        catch (final IOException ex)
        {
            throw new UncheckedIOException("cannot read " + path + " next to " + besides, ex);
        }
    }
}
