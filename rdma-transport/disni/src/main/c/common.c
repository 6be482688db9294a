/* Argument checks and exceptions shared by every NativeDispatcher entry (see common.h). */
#define _GNU_SOURCE
#include "common.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

void reverb_throw_io_msg(JNIEnv *env, const char *what, const char *message)
{
    if ((*env)->ExceptionCheck(env))
    {
        return;
    }
    jclass type = (*env)->FindClass(env, "java/io/IOException");
    if (type == NULL)
    {
        return; /* FindClass left a NoClassDefFoundError pending */
    }
    char text[256];
    snprintf(text, sizeof(text), "j2c::%s: %s\n", what, message);
    (*env)->ThrowNew(env, type, text);
    (*env)->DeleteLocalRef(env, type);
}

void reverb_throw_io(JNIEnv *env, const char *what, const char *call, int err)
{
    char buffer[128];
    char message[200];
    if (err == 0)
    {
        snprintf(message, sizeof(message), "%s failed", call);
    }
    else
    {
        /* GNU strerror_r: thread-safe, returns the text (which may or may not be in buffer) */
        const char *reason = strerror_r(err < 0 ? -err : err, buffer, sizeof(buffer));
        snprintf(message, sizeof(message), "%s failed: %s", call, reason);
    }
    reverb_throw_io_msg(env, what, message);
}

int reverb_check_handle(JNIEnv *env, const char *what, const char *arg, jlong value)
{
    if (value != 0)
    {
        return 1;
    }
    char message[128];
    snprintf(message, sizeof(message), "%s is null", arg);
    reverb_throw_io_msg(env, what, message);
    return 0;
}

int reverb_wait_readable(int fd, int timeout_ms)
{
    struct pollfd pfd = { .fd = fd, .events = POLLIN, .revents = 0 };
    for (;;)
    {
        int ready = poll(&pfd, 1, timeout_ms < 0 ? -1 : timeout_ms);
        if (ready > 0)
        {
            if ((pfd.revents & POLLIN) != 0)
            {
                return 1;
            }
            /* POLLERR, POLLHUP or POLLNVAL without data: the descriptor is unusable */
            errno = (pfd.revents & POLLNVAL) != 0 ? EBADF : EIO;
            return -1;
        }
        if (ready == 0)
        {
            return 0;
        }
        if (errno != EINTR)
        {
            return -1;
        }
        /* EINTR: a signal (e.g. the JVM's own) interrupted the wait; waiting again may overrun the timeout by
           at most one more timeout, which DiSNi's callers (polling loops) tolerate */
    }
}
