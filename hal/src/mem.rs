//! `memcpy`, `memmove` and `memset` for the kernel, with eight-byte moves
//! in unrolled loops.
//!
//! `compiler_builtins`' versions (what `-Zbuild-std-features=
//! compiler-builtins-mem` links otherwise) use string instructions
//! (`rep movsq`, `rep stosq`) on a CPU without fast strings. QEMU's TCG
//! runs those one element per step: zeroing or copying a page cost about
//! 7 µs, and starting busybox (2 MiB read, zeroed, copied into its pages)
//! took 18 ms. Linux, on such a CPU (QEMU's `qemu64` has no ERMS), also
//! copies with an unrolled loop of moves. `compiler_builtins` defines its
//! versions as weak symbols, so these take their place.
//!
//! They are written in assembly so that the compiler cannot turn a loop
//! back into a call of themselves.

use core::arch::global_asm;

global_asm!(
    r#"
    .section .text.hal_mem, "ax"

    /* void *memcpy(void *dst [rdi], const void *src [rsi], size_t n [rdx]) */
    .global memcpy
    .type memcpy, @function
memcpy:
    mov rax, rdi
    cmp rdx, 64
    jb 2f
1:
    mov rcx, [rsi]
    mov r8, [rsi + 8]
    mov r9, [rsi + 16]
    mov r10, [rsi + 24]
    mov [rdi], rcx
    mov [rdi + 8], r8
    mov [rdi + 16], r9
    mov [rdi + 24], r10
    mov rcx, [rsi + 32]
    mov r8, [rsi + 40]
    mov r9, [rsi + 48]
    mov r10, [rsi + 56]
    mov [rdi + 32], rcx
    mov [rdi + 40], r8
    mov [rdi + 48], r9
    mov [rdi + 56], r10
    add rsi, 64
    add rdi, 64
    sub rdx, 64
    cmp rdx, 64
    jae 1b
2:
    cmp rdx, 8
    jb 3f
    mov rcx, [rsi]
    mov [rdi], rcx
    add rsi, 8
    add rdi, 8
    sub rdx, 8
    jmp 2b
3:
    test rdx, rdx
    jz 4f
    mov cl, [rsi]
    mov [rdi], cl
    inc rsi
    inc rdi
    dec rdx
    jmp 3b
4:
    ret
    .size memcpy, . - memcpy

    /* void *memmove(void *dst [rdi], const void *src [rsi], size_t n [rdx]):
       forwards unless the destination starts inside the source, then
       backwards from the end. */
    .global memmove
    .type memmove, @function
memmove:
    mov rax, rdi
    sub rax, rsi
    cmp rax, rdx
    jae memcpy
    mov rax, rdi
    lea rsi, [rsi + rdx]
    lea rdi, [rdi + rdx]
5:
    cmp rdx, 8
    jb 6f
    sub rsi, 8
    sub rdi, 8
    mov rcx, [rsi]
    mov [rdi], rcx
    sub rdx, 8
    jmp 5b
6:
    test rdx, rdx
    jz 7f
    dec rsi
    dec rdi
    mov cl, [rsi]
    mov [rdi], cl
    dec rdx
    jmp 6b
7:
    ret
    .size memmove, . - memmove

    /* void *memset(void *dst [rdi], int c [esi], size_t n [rdx]) */
    .global memset
    .type memset, @function
memset:
    mov r9, rdi
    movzx eax, sil
    mov rcx, 0x0101010101010101
    imul rax, rcx
    cmp rdx, 64
    jb 9f
8:
    mov [rdi], rax
    mov [rdi + 8], rax
    mov [rdi + 16], rax
    mov [rdi + 24], rax
    mov [rdi + 32], rax
    mov [rdi + 40], rax
    mov [rdi + 48], rax
    mov [rdi + 56], rax
    add rdi, 64
    sub rdx, 64
    cmp rdx, 64
    jae 8b
9:
    cmp rdx, 8
    jb 10f
    mov [rdi], rax
    add rdi, 8
    sub rdx, 8
    jmp 9b
10:
    test rdx, rdx
    jz 11f
    mov [rdi], al
    inc rdi
    dec rdx
    jmp 10b
11:
    mov rax, r9
    ret
    .size memset, . - memset
"#
);
