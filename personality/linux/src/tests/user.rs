//! `user`: the copies every call makes of user memory, and the fake
//! user memory beneath them.

use alloc::vec::Vec;

use proptest::prelude::*;
use vfs::Errno;

use super::*;
use crate::user::{
    read, read_c_string, read_iovec, read_path, read_string_vector, read_u64, read_u64s, write,
    MAX_STRINGS, MAX_STRING_BYTES,
};

const PAGE: u64 = 4096;

#[test]
fn copies_reach_only_mapped_user_pages() {
    let _fixture = Fixture::new();
    let mut bytes = [0u8; 8];
    assert_eq!(read(at(0), &mut bytes), Ok(()));
    assert_eq!(read(UNMAPPED, &mut bytes), Err(Errno::EFAULT));
    assert_eq!(read(UNMAPPED - 4, &mut bytes), Err(Errno::EFAULT));
    assert_eq!(read(KERNEL_ADDRESS, &mut bytes), Err(Errno::EFAULT));
    assert_eq!(read(u64::MAX - 3, &mut bytes), Err(Errno::EFAULT));
    assert_eq!(write(UNMAPPED - 4, &bytes), Err(Errno::EFAULT));
    // A copy that faults changes nothing.
    put(MAPPED_BYTES as u64 - 4, &[1, 2, 3, 4]);
    assert_eq!(write(UNMAPPED - 4, &[9; 8]), Err(Errno::EFAULT));
    assert_eq!(fake::peek(UNMAPPED - 4, 4), [1, 2, 3, 4]);
    // Nothing to copy is never a fault inside the user half.
    assert_eq!(read(UNMAPPED, &mut []), Ok(()));
    assert_eq!(read(KERNEL_ADDRESS, &mut []), Err(Errno::EFAULT));
}

#[test]
fn a_page_made_to_fault_faults_and_a_read_only_page_refuses_writes() {
    let _fixture = Fixture::new();
    fake::unmap(at(PAGE), 1);
    let mut bytes = [0u8; 16];
    assert_eq!(read(at(PAGE - 8), &mut bytes), Err(Errno::EFAULT));
    assert_eq!(read(at(2 * PAGE), &mut bytes), Ok(()));
    fake::map_read_only(at(PAGE), 1);
    assert_eq!(read(at(PAGE - 8), &mut bytes), Ok(()));
    assert_eq!(write(at(PAGE - 8), &bytes), Err(Errno::EFAULT));
}

#[test]
fn words_are_read_little_endian_without_wrapping() {
    let _fixture = Fixture::new();
    put(0, &[1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(read_u64(at(0)), Ok(1));
    assert_eq!(read_u64s::<2>(at(0)), Ok([1, 2]));
    assert_eq!(read_u64s::<2>(UNMAPPED - 8), Err(Errno::EFAULT));
    assert_eq!(read_u64s::<2>(u64::MAX - 8), Err(Errno::EFAULT));
}

#[test]
fn a_path_is_limited_non_empty_and_faults_where_memory_ends() {
    let _fixture = Fixture::new();
    let empty = put_string(0, b"");
    assert_eq!(read_path(empty), Err(Errno::ENOENT));
    let path = put_string(64, b"/bin/sh");
    assert_eq!(read_path(path), Ok(b"/bin/sh".to_vec()));
    // PATH_MAX bytes with the NUL fit; one more does not.
    let longest = put_string(PAGE, &[b'p'; vfs::PATH_MAX - 1]);
    assert_eq!(
        read_path(longest).map(|path| path.len()),
        Ok(vfs::PATH_MAX - 1)
    );
    let too_long = put_string(3 * PAGE, &[b'p'; vfs::PATH_MAX]);
    assert_eq!(read_path(too_long), Err(Errno::ENAMETOOLONG));
    // Too long is found before the unmapped page it would run into.
    fake::poke(
        UNMAPPED - vfs::PATH_MAX as u64 - 1,
        &[b'q'; vfs::PATH_MAX + 1],
    );
    assert_eq!(
        read_path(UNMAPPED - vfs::PATH_MAX as u64 - 1),
        Err(Errno::ENAMETOOLONG)
    );
    assert_eq!(read_path(UNMAPPED - 10), Err(Errno::EFAULT));
    assert_eq!(read_path(u64::MAX - 2), Err(Errno::EFAULT));
}

#[test]
fn an_iovec_address_that_overflows_is_efault() {
    let _fixture = Fixture::new();
    let vectors = put_iovecs(0, &[(5, 6), (7, 8)]);
    assert_eq!(read_iovec(vectors, 1), Ok((7, 8)));
    assert_eq!(read_iovec(vectors, u64::MAX / 8), Err(Errno::EFAULT));
    assert_eq!(read_iovec(u64::MAX - 8, 1), Err(Errno::EFAULT));
}

/// Writes the strings and a null-terminated array of pointers to them:
/// the array's address.
fn put_vector(strings: &[&[u8]]) -> u64 {
    let mut pointers = Vec::new();
    let mut offset = 0x8000;
    for string in strings {
        pointers.extend_from_slice(&put_string(offset, string).to_le_bytes());
        offset += string.len() as u64 + 1;
    }
    pointers.extend_from_slice(&0u64.to_le_bytes());
    put(0, &pointers)
}

#[test]
fn a_string_vector_is_limited_in_count_and_bytes() {
    let _fixture = Fixture::new();
    assert_eq!(read_string_vector(0), Ok(Vec::new()));
    let vector = put_vector(&[b"sh", b"-c", b""]);
    assert_eq!(
        read_string_vector(vector),
        Ok(alloc::vec![b"sh".to_vec(), b"-c".to_vec(), Vec::new()])
    );
    // A pointer to nowhere, and an array running into the unmapped page.
    put(0, &[UNMAPPED.to_le_bytes(), 0u64.to_le_bytes()].concat());
    assert_eq!(read_string_vector(at(0)), Err(Errno::EFAULT));
    put(MAPPED_BYTES as u64 - 8, &at(0x8000).to_le_bytes());
    assert_eq!(read_string_vector(UNMAPPED - 8), Err(Errno::EFAULT));
    // More than MAX_STRINGS pointers, all to one short string.
    let one = put_string(0x8000, b"x").to_le_bytes();
    let many: Vec<u8> = core::iter::repeat_n(one, MAX_STRINGS + 1)
        .flatten()
        .collect();
    let array = MAPPED + MAPPED_BYTES as u64 * 2;
    fake::map(array, many.len() + 8);
    fake::poke(array, &many);
    fake::poke(array + many.len() as u64, &0u64.to_le_bytes());
    assert_eq!(read_string_vector(array), Err(Errno::E2BIG));
    fake::poke(array + 8 * MAX_STRINGS as u64, &0u64.to_le_bytes());
    assert_eq!(
        read_string_vector(array).map(|strings| strings.len()),
        Ok(MAX_STRINGS)
    );
    // Two strings whose bytes together pass the limit.
    let half = alloc::vec![b'y'; MAX_STRING_BYTES / 2];
    fake::map(array, 2 * MAX_STRING_BYTES + 64);
    let first = array + 64;
    let second = first + half.len() as u64 + 1;
    fake::poke(first, &[half.as_slice(), b"\0"].concat());
    fake::poke(second, &[half.as_slice(), b"\0"].concat());
    fake::poke(
        array,
        &[first.to_le_bytes(), second.to_le_bytes(), [0; 8]].concat(),
    );
    assert_eq!(read_string_vector(array), Err(Errno::E2BIG));
}

proptest! {
    /// A string is read whole wherever it lies across a page boundary,
    /// even right before an unmapped page; with no NUL before the
    /// unmapped page, it is EFAULT.
    #[test]
    fn a_c_string_reads_across_page_boundaries(
        length in 0usize..300,
        before_boundary in 0u64..300,
    ) {
        let _fixture = Fixture::new();
        let text: Vec<u8> = (0..length).map(|index| b'a' + (index % 26) as u8).collect();
        // Straddling the boundary between the first two pages.
        let address = at(PAGE).saturating_sub(before_boundary).max(at(0));
        fake::poke(address, &[text.as_slice(), b"\0"].concat());
        prop_assert_eq!(read_c_string(address, 4096), Ok(text.clone()));
        // Ending with its NUL on the last mapped byte.
        let address = UNMAPPED - length as u64 - 1;
        fake::poke(address, &[text.as_slice(), b"\0"].concat());
        prop_assert_eq!(read_c_string(address, 4096), Ok(text.clone()));
        // The same bytes without the NUL run into the unmapped page.
        let address = UNMAPPED - length as u64;
        fake::poke(address, &text);
        prop_assert_eq!(read_c_string(address, 4096), Err(Errno::EFAULT));
        // And a limit at or below its length is ENAMETOOLONG.
        if length > 0 {
            let address = at(PAGE).saturating_sub(before_boundary).max(at(0));
            fake::poke(address, &[text.as_slice(), b"\0"].concat());
            prop_assert_eq!(read_c_string(address, length), Err(Errno::ENAMETOOLONG));
            prop_assert_eq!(read_c_string(address, length + 1), Ok(text));
        }
    }
}
