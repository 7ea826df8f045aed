/*
 * spindle.h: the C SDK for Spindle extensions.
 *
 * Build an extension with clang and wasm-ld (Debian: clang-19, lld-19):
 *
 *   clang --target=wasm32-unknown-unknown -O2 -nostdlib -I sdk/c \
 *         -Wl,--no-entry -o ext.wasm ext.c
 *
 * The declarations below mirror the kernel's import table
 * (abi/src/lib.rs, for_each_import!) one to one; a host test in
 * wasm/tests/sdk.rs checks that every procedure here exists there with the
 * same number and types of parameters, and the reverse. Pointers are i32
 * offsets into the extension's linear memory; the kernel checks every range.
 * Procedures returning int32_t return a status (negative, SPINDLE_*) or a
 * non-negative value such as a handle.
 *
 * Conventions: export `init` (SPINDLE_EXPORT("init")) to run code once after
 * loading; handlers and guards are exported functions taking the event's
 * parameters by value (a guard returns int32_t, non-zero for true, and must
 * be side-effect free: no stores, no global writes, only pure procedures).
 */
#ifndef SPINDLE_H
#define SPINDLE_H

#include <stdint.h>

#define SPINDLE_IMPORT(name) __attribute__((import_module("spindle"), import_name(name)))
#define SPINDLE_EXPORT(name) __attribute__((export_name(name)))

/* Status codes (spindle_abi::Status). */
#define SPINDLE_OK 0
#define SPINDLE_NOT_FOUND (-1)
#define SPINDLE_WRONG_KIND (-2)
#define SPINDLE_DENIED (-3)
#define SPINDLE_TYPE (-4)
#define SPINDLE_LIMIT (-5)
#define SPINDLE_NOT_PURE (-6)
#define SPINDLE_NO_HANDLER (-7)
#define SPINDLE_FAULTED (-8)
#define SPINDLE_INVALID (-9)
#define SPINDLE_REFUSED (-10)

/* Handle kinds (spindle_abi::HandleKind). */
#define SPINDLE_HANDLE_EVENT 1
#define SPINDLE_HANDLE_BINDING 2
#define SPINDLE_HANDLE_PACKET 3
#define SPINDLE_HANDLE_STREAMS 4
#define SPINDLE_HANDLE_LISTENER 5
#define SPINDLE_HANDLE_DIRECTORY 6
#define SPINDLE_HANDLE_FILE 7

/* Install modes (spindle_abi::InstallMode). */
#define SPINDLE_SYNCHRONOUS 0
#define SPINDLE_EPHEMERAL 1

/* Writes message[0..len) to the kernel console. */
SPINDLE_IMPORT("log") int32_t spindle_log(const char *message, int32_t len);
/* Does nothing: the cost of a Wasm-to-kernel call. */
SPINDLE_IMPORT("null_call") void spindle_null_call(void);
/* Nanoseconds since boot. */
SPINDLE_IMPORT("timer_now_ns") int64_t spindle_timer_now_ns(void);
/* The handle granted under name[0..len), or SPINDLE_NOT_FOUND. */
SPINDLE_IMPORT("handle_find") int32_t spindle_handle_find(const char *name, int32_t len);
/* The kind of a handle; traps on a bad or revoked handle. */
SPINDLE_IMPORT("handle_kind") int32_t spindle_handle_kind(int32_t handle);
/* Gives a handle up; traps on a bad or revoked handle. */
SPINDLE_IMPORT("handle_drop") int32_t spindle_handle_drop(int32_t handle);
/* Installs the export `handler` on `event`, guarded by the export `guard`
 * if guard_len != 0; returns a binding handle or a status. */
SPINDLE_IMPORT("install") int32_t spindle_install(int32_t event, const char *handler, int32_t handler_len,
                                                  const char *guard, int32_t guard_len, int32_t mode,
                                                  int64_t fuel);
/* Removes an installation. */
SPINDLE_IMPORT("remove") int32_t spindle_remove(int32_t binding);
/* Raises `event` with arg_count 64-bit argument slots; the result slot, if
 * any, is written to *result. */
SPINDLE_IMPORT("raise") int32_t spindle_raise(int32_t event, const uint64_t *args, int32_t arg_count,
                                              uint64_t *result);
/* Adds a declarative guard to an installation: its handler runs only when
 * event parameter `param` equals `value` (indexed by the dispatcher). */
SPINDLE_IMPORT("guard_equals") int32_t spindle_guard_equals(int32_t binding, int32_t param, int64_t value);
/* Length of a packet lent to a network handler, as its layer sees it. */
SPINDLE_IMPORT("packet_length") int32_t spindle_packet_length(int32_t packet);
/* Copies up to len bytes of the packet from `offset`; returns the count. */
SPINDLE_IMPORT("packet_read") int32_t spindle_packet_read(int32_t packet, int32_t offset, void *buffer,
                                                          int32_t len);
/* Answers the packet at its layer (UDP: a datagram back to its source). */
SPINDLE_IMPORT("packet_reply") int32_t spindle_packet_reply(int32_t packet, const void *data, int32_t data_len);
/* Answers the packet with len bytes of `file` from `offset` (a stream:
 * queued and sent from the file). */
SPINDLE_IMPORT("packet_reply_file") int32_t spindle_packet_reply_file(int32_t packet, int32_t file, int64_t offset,
                                                                      int64_t len);
/* Accepts TCP connections on `port` through the stream service `streams`
 * (granted as "streams"); each connection's data raises TCP.StreamData.
 * Returns a listener handle or a status. */
SPINDLE_IMPORT("stream_listen") int32_t spindle_stream_listen(int32_t streams, int32_t port);
/* Opens the regular file at `path` beneath `directory` (granted as
 * "files"), read-only; returns a file handle or a status. */
SPINDLE_IMPORT("file_open") int32_t spindle_file_open(int32_t directory, const char *path, int32_t path_len);
/* Length in bytes of an open file. */
SPINDLE_IMPORT("file_length") int64_t spindle_file_length(int32_t file);
/* A number that changes when the file is written. */
SPINDLE_IMPORT("file_version") int64_t spindle_file_version(int32_t file);
/* Copies up to len bytes of the file from `offset`; returns the count. */
SPINDLE_IMPORT("file_read") int32_t spindle_file_read(int32_t file, int64_t offset, void *buffer, int32_t len);

/* Length of a NUL-terminated string (no libc). */
static inline int32_t spindle_strlen(const char *text) {
    int32_t len = 0;
    while (text[len] != 0) {
        len++;
    }
    return len;
}

/* Logs a NUL-terminated string. */
static inline int32_t spindle_log_str(const char *text) { return spindle_log(text, spindle_strlen(text)); }

#endif /* SPINDLE_H */
