package io.reverb.rdma.provider.disni.emu;

import io.reverb.rdma.provider.disni.DisniVerbsProvider;
import io.reverb.rdma.provider.disni.MainDispatcherClass;
import java.io.IOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.HashMap;
import java.util.Map;

/**
 * The real native half: Reverb's own {@code NativeDispatcher} from the main classes (which loads the library
 * bundled in reverb-transport-rdma, or a libdisni on {@code java.library.path}), defined in a class loader of its
 * own (every other class comes from the test class path), so that its library loading and JNI binding work as
 * without the test-scope shadow. Used whenever the emulation is not selected, i.e. on a host with a real RDMA
 * device the tests run against it.
 */
final class RealDispatcher implements DispatcherBackend
{
    private final Class<?> type;
    private final Map<String, Method> methods = new HashMap<>();
    private volatile Object real;

    private RealDispatcher(final Class<?> type)
    {
        this.type = type;
        for (final Method method : type.getDeclaredMethods())
        {
            methods.put(method.getName(), method);
        }
    }

    /**
     * Loads and initialises Reverb's class: its static initialiser loads the native half, so a library that cannot
     * be loaded (rdma-core's runtime libraries missing) throws {@link UnsatisfiedLinkError} here.
     */
    static RealDispatcher load()
    {
        try
        {
            // The main classes (a directory in the build, the jar elsewhere), not the DiSNi jar.
            return new RealDispatcher(MainDispatcherClass.define(DisniVerbsProvider.class, true));
        }
        catch (final ExceptionInInitializerError ex)
        {
            if (ex.getCause() instanceof Error)
            {
                throw (Error)ex.getCause();
            }
            throw ex;
        }
    }

    @Override
    public void open() throws IOException
    {
        if (real != null)
        {
            return;
        }
        try
        {
            final Constructor<?> constructor = type.getDeclaredConstructor();
            constructor.setAccessible(true);
            real = constructor.newInstance();
        }
        catch (final InvocationTargetException ex)
        {
            throw rethrow(ex);
        }
        catch (final ReflectiveOperationException ex)
        {
            throw new IllegalStateException(ex);
        }
    }

    @Override
    public boolean emulated()
    {
        return false;
    }

    private Object call(final String name, final Object... args) throws IOException
    {
        try
        {
            return methods.get(name).invoke(real, args);
        }
        catch (final InvocationTargetException ex)
        {
            throw rethrow(ex);
        }
        catch (final IllegalAccessException ex)
        {
            throw new IllegalStateException(ex);
        }
    }

    private Object callQuietly(final String name, final Object... args)
    {
        try
        {
            return call(name, args);
        }
        catch (final IOException ex)
        {
            throw new IllegalStateException(ex);
        }
    }

    private static IOException rethrow(final InvocationTargetException ex)
    {
        final Throwable cause = ex.getCause();
        if (cause instanceof IOException)
        {
            return (IOException)cause;
        }
        if (cause instanceof RuntimeException)
        {
            throw (RuntimeException)cause;
        }
        if (cause instanceof Error)
        {
            throw (Error)cause;
        }
        return new IOException(cause);
    }

    // CHECKSTYLE.OFF: MethodName (libdisni's JNI names)
    @Override
    public long _createEventChannel() throws IOException
    {
        return (Long)call("_createEventChannel");
    }

    @Override
    public long _createId(final long a0, final short a1) throws IOException
    {
        return (Long)call("_createId", a0, a1);
    }

    @Override
    public long _createQP(final long a0, final long a1, final long a2, final long a3, final int a4, final int a5,
        final int a6, final int a7) throws IOException
    {
        return (Long)call("_createQP", a0, a1, a2, a3, a4, a5, a6, a7);
    }

    @Override
    public void _bindAddr(final long a0, final long a1) throws IOException
    {
        call("_bindAddr", a0, a1);
    }

    @Override
    public void _listen(final long a0, final int a1) throws IOException
    {
        call("_listen", a0, a1);
    }

    @Override
    public void _resolveAddr(final long a0, final long a1, final long a2, final int a3) throws IOException
    {
        call("_resolveAddr", a0, a1, a2, a3);
    }

    @Override
    public void _resolveRoute(final long a0, final int a1) throws IOException
    {
        call("_resolveRoute", a0, a1);
    }

    @Override
    public int _getCmEvent(final long a0, final long a1, final long a2, final int a3)
    {
        return (Integer)callQuietly("_getCmEvent", a0, a1, a2, a3);
    }

    @Override
    public void _connect(final long a0, final int a1, final int a2, final long a3, final byte a4) throws IOException
    {
        call("_connect", a0, a1, a2, a3, a4);
    }

    @Override
    public void _accept(final long a0, final int a1, final int a2) throws IOException
    {
        call("_accept", a0, a1, a2);
    }

    @Override
    public int _ackCmEvent(final int a0)
    {
        return (Integer)callQuietly("_ackCmEvent", a0);
    }

    @Override
    public int _disconnect(final long a0)
    {
        return (Integer)callQuietly("_disconnect", a0);
    }

    @Override
    public int _destroyEventChannel(final long a0)
    {
        return (Integer)callQuietly("_destroyEventChannel", a0);
    }

    @Override
    public int _destroyCmId(final long a0)
    {
        return (Integer)callQuietly("_destroyCmId", a0);
    }

    @Override
    public int _destroyQP(final long a0)
    {
        return (Integer)callQuietly("_destroyQP", a0);
    }

    @Override
    public int _getSrcAddr(final long a0, final long a1)
    {
        return (Integer)callQuietly("_getSrcAddr", a0, a1);
    }

    @Override
    public int _getDstAddr(final long a0, final long a1)
    {
        return (Integer)callQuietly("_getDstAddr", a0, a1);
    }

    @Override
    public int _destroyEp(final long a0)
    {
        return (Integer)callQuietly("_destroyEp", a0);
    }

    @Override
    public long _allocPd(final long a0) throws IOException
    {
        return (Long)call("_allocPd", a0);
    }

    @Override
    public long _createCompChannel(final long a0) throws IOException
    {
        return (Long)call("_createCompChannel", a0);
    }

    @Override
    public long _createCQ(final long a0, final long a1, final int a2, final int a3) throws IOException
    {
        return (Long)call("_createCQ", a0, a1, a2, a3);
    }

    @Override
    public int _modifyQP(final long a0, final long a1) throws IOException
    {
        return (Integer)call("_modifyQP", a0, a1);
    }

    @Override
    public long _regMr(final long a0, final long a1, final int a2, final int a3, final long a4, final long a5,
        final long a6) throws IOException
    {
        return (Long)call("_regMr", a0, a1, a2, a3, a4, a5, a6);
    }

    @Override
    public int _queryOdpSupport(final long a0)
    {
        return (Integer)callQuietly("_queryOdpSupport", a0);
    }

    @Override
    public int _expPrefetchMr(final long a0, final long a1, final int a2) throws IOException
    {
        return (Integer)call("_expPrefetchMr", a0, a1, a2);
    }

    @Override
    public void _deregMr(final long a0) throws IOException
    {
        call("_deregMr", a0);
    }

    @Override
    public void _postSend(final long a0, final long a1) throws IOException
    {
        call("_postSend", a0, a1);
    }

    @Override
    public void _postRecv(final long a0, final long a1) throws IOException
    {
        call("_postRecv", a0, a1);
    }

    @Override
    public int _getCqEvent(final long a0, final int a1) throws IOException
    {
        return (Integer)call("_getCqEvent", a0, a1);
    }

    @Override
    public int _pollCQ(final long a0, final int a1, final long a2) throws IOException
    {
        return (Integer)call("_pollCQ", a0, a1, a2);
    }

    @Override
    public int _reqNotifyCQ(final long a0, final int a1) throws IOException
    {
        return (Integer)call("_reqNotifyCQ", a0, a1);
    }

    @Override
    public int _ackCqEvent(final long a0, final int a1)
    {
        return (Integer)callQuietly("_ackCqEvent", a0, a1);
    }

    @Override
    public int _destroyCompChannel(final long a0)
    {
        return (Integer)callQuietly("_destroyCompChannel", a0);
    }

    @Override
    public int _deallocPd(final long a0)
    {
        return (Integer)callQuietly("_deallocPd", a0);
    }

    @Override
    public int _destroyCQ(final long a0)
    {
        return (Integer)callQuietly("_destroyCQ", a0);
    }

    @Override
    public long _getContext(final long a0) throws IOException
    {
        return (Long)call("_getContext", a0);
    }

    @Override
    public int _getQpNum(final long a0) throws IOException
    {
        return (Integer)call("_getQpNum", a0);
    }

    @Override
    public int _getContextFd(final long a0) throws IOException
    {
        return (Integer)call("_getContextFd", a0);
    }

    @Override
    public int _getContextNumCompVectors(final long a0) throws IOException
    {
        return (Integer)call("_getContextNumCompVectors", a0);
    }

    @Override
    public int _getPdHandle(final long a0) throws IOException
    {
        return (Integer)call("_getPdHandle", a0);
    }

    @Override
    public int _getSockAddrInSize()
    {
        return (Integer)callQuietly("_getSockAddrInSize");
    }

    @Override
    public int _getIbvRecvWRSize()
    {
        return (Integer)callQuietly("_getIbvRecvWRSize");
    }

    @Override
    public int _getIbvSendWRSize()
    {
        return (Integer)callQuietly("_getIbvSendWRSize");
    }

    @Override
    public int _getIbvSgeSize()
    {
        return (Integer)callQuietly("_getIbvSgeSize");
    }

    @Override
    public int _getIbvWCSize()
    {
        return (Integer)callQuietly("_getIbvWCSize");
    }

    @Override
    public int _getRemoteAddressOffset()
    {
        return (Integer)callQuietly("_getRemoteAddressOffset");
    }

    @Override
    public int _getRKeyOffset()
    {
        return (Integer)callQuietly("_getRKeyOffset");
    }

    @Override
    public int _getVersion()
    {
        return (Integer)callQuietly("_getVersion");
    }
    // CHECKSTYLE.ON: MethodName
}
