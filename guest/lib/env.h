/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A program's parameters, from its environment: a NAME=VALUE word of the
 * kernel command line that the kernel does not know ends up in init's, and
 * so in every program's.
 */
#ifndef SHSTK_LAB_ENV_H
#define SHSTK_LAB_ENV_H

#include <stdlib.h>

/* @name as a number (decimal, 0x hex or 0 octal), or @dflt if unset or empty. */
static inline unsigned long env_num(const char *name, unsigned long dflt)
{
	const char *v = getenv(name);

	return v && *v ? strtoul(v, NULL, 0) : dflt;
}

#endif /* SHSTK_LAB_ENV_H */
