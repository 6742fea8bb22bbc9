// SPDX-License-Identifier: GPL-2.0
/*
 * snapshot_point: where a Bochs snapshot is taken (guest/init.sh,
 * shstk.snapshot=).  Waits until every tty named on the command line has
 * sent all it was given, then executes Bochs's magic breakpoint,
 * "xchg %bx,%bx": the project's Bochs started with "-save DIR" saves the
 * state there and quits; a restored run resumes after the instruction.
 * Elsewhere the instruction does nothing.
 *
 * The drain matters: what sits in a tty's buffer at the save is sent
 * nowhere after the restore, whose serial ports write to new files.
 */
#include <fcntl.h>
#include <stdio.h>
#include <termios.h>
#include <unistd.h>

#if !defined(__x86_64__)
#error "snapshot_point is for x86 (Bochs) guests only"
#endif

int main(int argc, char **argv)
{
	int i, fd;

	for (i = 1; i < argc; i++) {
		fd = open(argv[i], O_WRONLY | O_NOCTTY);
		if (fd < 0 || tcdrain(fd)) {
			perror(argv[i]);
			return 1;
		}
		close(fd);
	}
	asm volatile("xchg %%bx, %%bx" ::: "memory");
	return 0;
}
