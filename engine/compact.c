/* compact.c -- online compaction (see keel.h). */
#include "internal.h"

int keel_compact(keel_db *db)
{
	if (!db)
		return KEEL_EINVAL;
	return KEEL_EINVAL; /* TODO(issue 5): replaced by the real compaction */
}
