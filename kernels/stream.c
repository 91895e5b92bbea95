/*
 * ctb-stream: sustainable memory bandwidth with the four STREAM kernels on
 * three arrays of doubles, OpenMP-parallel:
 *
 *   Copy  c = a          2 arrays moved per element
 *   Scale b = q * c      2
 *   Add   c = a + b      3
 *   Triad a = b + q * c  3
 *
 *   ctb-stream --size N [--ntimes K] [--threads T] [--corrupt]
 *
 * Each of K iterations runs the four kernels in that order, each timed on
 * its own. As STREAM reports, the rate of a kernel is bytes moved over its
 * best (minimum) time, the first iteration excluded; GB = 1e9 bytes.
 *
 * Afterwards every element of the three arrays is compared with the value
 * the same sequence of operations gives on scalars; a relative error of
 * 1e-13 or more anywhere fails. (STREAM checks the average error; checking
 * each element also catches a single wrong one.)
 *
 * Output: one JSON line on stdout. Exit status 1 on bad arguments or
 * allocation failure, 3 when validation fails (the JSON, with
 * "validated":false, is printed first; the reason goes to stderr).
 *
 * --corrupt changes one element after the timed loop: a test hook that
 * proves the validation catches it.
 */
#include <float.h>
#include <getopt.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCALAR 3.0

enum { COPY, SCALE, ADD, TRIAD, NKERNELS };
static const char *const names[NKERNELS] = {"copy", "scale", "add", "triad"};
static const double arrays_moved[NKERNELS] = {2, 2, 3, 3};

static void usage(void)
{
	fprintf(stderr, "usage: ctb-stream --size N [--ntimes K] [--threads T] [--corrupt]\n");
	exit(1);
}

static long parse_long(const char *s, const char *name, long min, long max)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (*s == '\0' || *end != '\0' || v < min || v > max) {
		fprintf(stderr, "ctb-stream: --%s %s: want an integer from %ld to %ld\n", name, s, min, max);
		exit(1);
	}
	return v;
}

static double *alloc_array(size_t n, const char *name)
{
	void *p = NULL;
	if (n > SIZE_MAX / sizeof(double) || posix_memalign(&p, 64, n * sizeof(double)) != 0) {
		fprintf(stderr, "ctb-stream: cannot allocate %zu bytes for array %s\n", n * sizeof(double), name);
		exit(1);
	}
	return p;
}

/* Largest relative error of x against the expected value want; NaN counts as infinite. */
static double max_rel_error(const double *x, size_t n, double want, size_t *where)
{
	double worst = 0.0;
	*where = 0;
	for (size_t j = 0; j < n; j++) {
		double e = fabs(x[j] - want) / fabs(want);
		if (!(e <= worst)) {
			worst = isnan(e) ? INFINITY : e;
			*where = j;
		}
	}
	return worst;
}

int main(int argc, char **argv)
{
	long size = 0, ntimes = 20, threads = 1;
	int corrupt = 0;
	static const struct option opts[] = {
		{"size", required_argument, NULL, 'n'},
		{"ntimes", required_argument, NULL, 'k'},
		{"threads", required_argument, NULL, 't'},
		{"corrupt", no_argument, NULL, 'c'},
		{NULL, 0, NULL, 0},
	};
	int c;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'n': size = parse_long(optarg, "size", 1, INT64_MAX / 64); break;
		/* a grows 15-fold per iteration: 15^262 overflows a double. */
		case 'k': ntimes = parse_long(optarg, "ntimes", 2, 250); break;
		case 't': threads = parse_long(optarg, "threads", 1, 1024); break;
		case 'c': corrupt = 1; break;
		default: usage();
		}
	}
	if (size == 0 || optind != argc)
		usage();

	omp_set_dynamic(0);
	omp_set_num_threads((int)threads);
	const size_t n = (size_t)size;
	double *a = alloc_array(n, "a"), *b = alloc_array(n, "b"), *cc = alloc_array(n, "c");

	/* First touch in parallel, with the kernels' schedule, so pages sit near the threads that use them. */
#pragma omp parallel for schedule(static)
	for (size_t j = 0; j < n; j++) {
		a[j] = 1.0;
		b[j] = 2.0;
		cc[j] = 0.0;
	}
#pragma omp parallel for schedule(static)
	for (size_t j = 0; j < n; j++)
		a[j] = 2.0 * a[j];

	double min_t[NKERNELS], max_t[NKERNELS], sum_t[NKERNELS];
	for (int k = 0; k < NKERNELS; k++) {
		min_t[k] = INFINITY;
		max_t[k] = 0.0;
		sum_t[k] = 0.0;
	}
	const double q = SCALAR;
	for (long it = 0; it < ntimes; it++) {
		double t[NKERNELS];

		t[COPY] = omp_get_wtime();
#pragma omp parallel for schedule(static)
		for (size_t j = 0; j < n; j++)
			cc[j] = a[j];
		t[COPY] = omp_get_wtime() - t[COPY];

		t[SCALE] = omp_get_wtime();
#pragma omp parallel for schedule(static)
		for (size_t j = 0; j < n; j++)
			b[j] = q * cc[j];
		t[SCALE] = omp_get_wtime() - t[SCALE];

		t[ADD] = omp_get_wtime();
#pragma omp parallel for schedule(static)
		for (size_t j = 0; j < n; j++)
			cc[j] = a[j] + b[j];
		t[ADD] = omp_get_wtime() - t[ADD];

		t[TRIAD] = omp_get_wtime();
#pragma omp parallel for schedule(static)
		for (size_t j = 0; j < n; j++)
			a[j] = b[j] + q * cc[j];
		t[TRIAD] = omp_get_wtime() - t[TRIAD];

		if (it == 0)
			continue; /* the first pass warms caches and TLBs, as in STREAM */
		for (int k = 0; k < NKERNELS; k++) {
			if (t[k] < min_t[k])
				min_t[k] = t[k];
			if (t[k] > max_t[k])
				max_t[k] = t[k];
			sum_t[k] += t[k];
		}
	}

	if (corrupt)
		b[n / 2] += 1.0e-6 * b[n / 2];

	/* The same operations on scalars give the value every element must hold. */
	double aj = 1.0, bj = 2.0, cj = 0.0;
	aj = 2.0 * aj;
	for (long it = 0; it < ntimes; it++) {
		cj = aj;
		bj = q * cj;
		cj = aj + bj;
		aj = bj + q * cj;
	}
	const double eps = 1e-13;
	struct { const char *name; const double *x; double want; } arr[3] = {{"a", a, aj}, {"b", b, bj}, {"c", cc, cj}};
	char reason[256] = "";
	for (int i = 0; i < 3 && reason[0] == '\0'; i++) {
		size_t where;
		double e = max_rel_error(arr[i].x, n, arr[i].want, &where);
		if (!(e < eps))
			snprintf(reason, sizeof reason, "array %s[%zu] = %.17g, want %.17g (relative error %.3g >= %g)",
			         arr[i].name, where, arr[i].x[where], arr[i].want, e, eps);
	}

	int actual_threads = 1;
#pragma omp parallel
	{
#pragma omp single
		actual_threads = omp_get_num_threads();
	}

	printf("{\"array_size\":%ld,\"threads\":%d,\"ntimes\":%ld,\"bytes_per_array\":%zu", size, actual_threads,
	       ntimes, n * sizeof(double));
	for (int k = 0; k < NKERNELS; k++) {
		double bytes = arrays_moved[k] * (double)sizeof(double) * (double)n;
		double rate = min_t[k] > 0 ? bytes / min_t[k] / 1e9 : 0.0;
		printf(",\"%s_gbs\":%.6g", names[k], rate);
	}
	const char *tname[3] = {"avg_time", "min_time", "max_time"};
	for (int s = 0; s < 3; s++) {
		printf(",\"%s\":{", tname[s]);
		for (int k = 0; k < NKERNELS; k++) {
			double v = s == 0 ? sum_t[k] / (double)(ntimes - 1) : s == 1 ? min_t[k] : max_t[k];
			printf("%s\"%s\":%.9g", k ? "," : "", names[k], v);
		}
		printf("}");
	}
	printf(",\"validated\":%s}\n", reason[0] ? "false" : "true");
	fflush(stdout);

	if (reason[0]) {
		fprintf(stderr, "ctb-stream: validation failed: %s\n", reason);
		return 3;
	}
	free(a);
	free(b);
	free(cc);
	return 0;
}
