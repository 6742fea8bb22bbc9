// SPDX-License-Identifier: GPL-2.0
/*
 * snapshot_point: where an emulator's post-boot snapshot is taken
 * (guest/init.sh, shstk.snapshot=).  Waits until every tty named on the
 * command line has sent all it was given, then, on x86, executes Bochs's
 * magic breakpoint, "xchg %bx,%bx": the project's Bochs started with
 * "-save DIR" saves the state there and quits; a restored run resumes
 * after the instruction.  Elsewhere the instruction does nothing.  QEMU
 * saves from the host instead, once init's line saying it is here is on
 * the console: the drain is what puts it there.
 *
 * The drain matters for both: what sits in a tty's buffer at the save is
 * sent nowhere after the restore, whose serial ports write to new files.
 */
#include <fcntl.h>
#include <stdio.h>
#include <termios.h>
#include <unistd.h>

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
#if defined(__x86_64__)
	asm volatile("xchg %%bx, %%bx" ::: "memory");
#endif
	return 0;
}
