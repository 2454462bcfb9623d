/*
 * provider-oci/procfs.h - pure parsers of the /proc text oci_local reads
 * about processes and of the runtime's pid file (procfs.c; fuzzed by
 * fuzz_oci_procfs). The kernel writes
 * these files, but the task names its own process: the comm of stat's field
 * 2 and status's Name line are the task's (prctl PR_SET_NAME), up to 15
 * bytes of anything but NUL, ')' and spaces included.
 */
#ifndef OTA_OCI_PROCFS_H
#define OTA_OCI_PROCFS_H

#include <stdbool.h>
#include <stddef.h>

/*
 * /proc/PID/stat (n bytes, any bytes): "PID (COMM) S f4 f5 ... f22 ...".
 * COMM ends at the LAST ')' (later fields are numbers); then one space, the
 * state letter, and single-space separated fields, field 22 (starttime,
 * clock ticks since boot) 1-20 decimal digits within unsigned long long.
 * false (state '\0', *starttime 0) otherwise: no ')' , a state that is not
 * one letter, fewer than 22 fields, a NUL.
 */
bool oci_proc_stat_parse(const char *text, size_t n, char *state, unsigned long long *starttime);

/*
 * The capability and no_new_privs lines of /proc/PID/status (n bytes):
 * "CapEff:\t<16 hex>" and the like, "NoNewPrivs:\t<0|1>". Each value is the
 * text after the key's ':' and its leading spaces and tabs, up to the end of
 * the line. A key given twice, a value that does not fit its field or holds
 * a NUL, leaves that field "" (a check against it then fails: never the
 * first or the last of two lines taken). Missing keys are "".
 */
/*
 * The pid file the runtime writes (`create --pid-file`, n bytes): decimal
 * digits, no sign, no leading zero, at most one "\n" after them, a value in
 * 1..INT_MAX (a pid_t). false (*pid 0) otherwise (strtol took " 12", "+12"
 * and "12abc" as 12, and values beyond a pid_t).
 */
bool oci_pid_file_parse(const char *text, size_t n, long *pid);

typedef struct oci_proc_caps {
	char eff[32], prm[32], bnd[32], amb[32], nnp[8];
} oci_proc_caps;
void oci_proc_status_caps(const char *text, size_t n, oci_proc_caps *out);

#endif
