/*
 * ctb-linpack: solve a dense random system A x = b with LU factorisation and
 * partial pivoting (LAPACK dgesv from OpenBLAS), time it and check the answer.
 *
 *   ctb-linpack --n N [--threads T] [--seed S] [--repeat R] [--corrupt]
 *
 * A (n x n, column-major) and b are filled from a seeded PRNG, uniform in
 * [-0.5, 0.5]. Each of R solves starts from the same A and b (restored
 * untimed). Flops per solve: 2/3 n^3 + 2 n^2, the LINPACK convention.
 *
 * Every solution is checked with HPL's scaled residual
 *   ||A x - b||_inf / (||A||_inf * ||x||_inf * n * eps)
 * against the original A and b. The original A is not kept: dgesv
 * overwrites the only copy with its LU factors, and the generator recreates
 * A bit for bit from the seed, which halves the memory (8 n^2 bytes rather
 * than 16 n^2). The largest residual over all solves is reported; ctrbench
 * fails the trial when it is not below 16.
 *
 * Output: one JSON line on stdout. Exit status 1 on bad arguments or
 * allocation failure, 2 when dgesv reports a singular matrix, 3 when the
 * residual check fails (the JSON is printed first).
 *
 * --corrupt perturbs the solution after the last solve: a test hook that
 * proves the residual check catches a wrong answer.
 */
#include <float.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* OpenBLAS (LP64 build): LAPACK's Fortran entry point and its thread knob. */
extern void dgesv_(const int *n, const int *nrhs, double *a, const int *lda,
                   int *ipiv, double *b, const int *ldb, int *info);
extern void openblas_set_num_threads(int n);

/* splitmix64: small, seedable, good enough to fill a test matrix. */
static uint64_t rng_state;

static uint64_t rng_next(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform in [-0.5, 0.5). */
static double rng_uniform(void)
{
	return (double)(rng_next() >> 11) * (1.0 / 9007199254740992.0) - 0.5;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *alloc_or_die(size_t count, size_t size, const char *what)
{
	if (count != 0 && size > SIZE_MAX / count) {
		fprintf(stderr, "ctb-linpack: %s: size overflows\n", what);
		exit(1);
	}
	void *p = malloc(count * size);
	if (p == NULL) {
		fprintf(stderr, "ctb-linpack: cannot allocate %zu bytes for %s\n", count * size, what);
		exit(1);
	}
	return p;
}

/* Prints a double as JSON: non-finite values have no JSON form, so null. */
static void json_number(const char *key, double v, const char *sep)
{
	if (isfinite(v))
		printf("\"%s\":%.6g%s", key, v, sep);
	else
		printf("\"%s\":null%s", key, sep);
}

/* Fills the n x n matrix (column-major) and then b from the seed. */
static void generate(size_t n, uint64_t seed, double *a, double *b)
{
	rng_state = seed;
	for (size_t k = 0; k < n * n; k++)
		a[k] = rng_uniform();
	for (size_t i = 0; i < n; i++)
		b[i] = rng_uniform();
}

/*
 * The scaled residual of x for the system generated from seed, whose
 * right-hand side is b0. A is regenerated column by column, in the order
 * generate() drew it.
 */
static double scaled_residual(size_t n, uint64_t seed, const double *b0,
                              const double *x, double *r, double *rowsum, double *resid)
{
	for (size_t i = 0; i < n; i++) {
		r[i] = -b0[i];
		rowsum[i] = 0.0;
	}
	rng_state = seed;
	for (size_t j = 0; j < n; j++) {
		double xj = x[j];
		for (size_t i = 0; i < n; i++) {
			double aij = rng_uniform();
			r[i] += aij * xj;
			rowsum[i] += fabs(aij);
		}
	}
	double rn = 0.0, an = 0.0, xn = 0.0;
	for (size_t i = 0; i < n; i++) {
		/* A NaN anywhere must poison the result, not vanish in a max. */
		if (isnan(r[i]) || isnan(x[i]))
			rn = NAN;
		if (fabs(r[i]) > rn)
			rn = fabs(r[i]);
		if (rowsum[i] > an)
			an = rowsum[i];
		if (fabs(x[i]) > xn)
			xn = fabs(x[i]);
	}
	*resid = rn;
	return rn / (an * xn * (double)n * DBL_EPSILON);
}

static void usage(void)
{
	fprintf(stderr, "usage: ctb-linpack --n N [--threads T] [--seed S] [--repeat R] [--corrupt]\n");
	exit(1);
}

static long parse_long(const char *s, const char *name, long min, long max)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (*s == '\0' || *end != '\0' || v < min || v > max) {
		fprintf(stderr, "ctb-linpack: --%s %s: want an integer from %ld to %ld\n", name, s, min, max);
		exit(1);
	}
	return v;
}

int main(int argc, char **argv)
{
	long n = 0, threads = 1, repeat = 1;
	uint64_t seed = 1;
	int corrupt = 0;
	static const struct option opts[] = {
		{"n", required_argument, NULL, 'n'},
		{"threads", required_argument, NULL, 't'},
		{"seed", required_argument, NULL, 's'},
		{"repeat", required_argument, NULL, 'r'},
		{"corrupt", no_argument, NULL, 'c'},
		{NULL, 0, NULL, 0},
	};
	int c;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'n': n = parse_long(optarg, "n", 1, 200000); break;
		case 't': threads = parse_long(optarg, "threads", 1, 1024); break;
		case 's': seed = (uint64_t)parse_long(optarg, "seed", 0, INT64_MAX); break;
		case 'r': repeat = parse_long(optarg, "repeat", 1, 1000000); break;
		case 'c': corrupt = 1; break;
		default: usage();
		}
	}
	if (n == 0 || optind != argc)
		usage();

	openblas_set_num_threads((int)threads);

	size_t nn = (size_t)n;
	double *a = alloc_or_die(nn * nn, sizeof(double), "the matrix");
	double *b0 = alloc_or_die(nn, sizeof(double), "the original right-hand side");
	double *x = alloc_or_die(nn, sizeof(double), "the solution");
	double *r = alloc_or_die(nn, sizeof(double), "the residual");
	double *rowsum = alloc_or_die(nn, sizeof(double), "the row sums");
	int *ipiv = alloc_or_die(nn, sizeof(int), "the pivots");

	const int ni = (int)n, one = 1;
	double best = INFINITY, total = 0.0, worst_scaled = 0.0, worst_resid = 0.0;
	for (long rep = 0; rep < repeat; rep++) {
		generate(nn, seed, a, b0);
		memcpy(x, b0, nn * sizeof(double));
		int info = 0;
		double t0 = now();
		dgesv_(&ni, &one, a, &ni, ipiv, x, &ni, &info);
		double t = now() - t0;
		if (info != 0) {
			fprintf(stderr, "ctb-linpack: dgesv failed: info=%d (%s)\n", info,
			        info > 0 ? "U is exactly singular" : "illegal argument");
			return 2;
		}
		if (corrupt && rep == repeat - 1)
			x[nn / 2] += 1.0;
		double resid;
		double scaled = scaled_residual(nn, seed, b0, x, r, rowsum, &resid);
		/* !(a <= b) keeps a NaN as the worst. */
		if (!(scaled <= worst_scaled)) {
			worst_scaled = scaled;
			worst_resid = resid;
		}
		if (t < best)
			best = t;
		total += t;
	}

	double flops = 2.0 / 3.0 * (double)n * (double)n * (double)n + 2.0 * (double)n * (double)n;
	double mean = total / (double)repeat;
	printf("{\"n\":%ld,\"threads\":%ld,\"repeat\":%ld,", n, threads, repeat);
	json_number("seconds", best, ",");
	json_number("seconds_mean", mean, ",");
	json_number("gflops", flops / best / 1e9, ",");
	json_number("gflops_mean", flops / mean / 1e9, ",");
	json_number("residual", worst_resid, ",");
	json_number("scaled_residual", worst_scaled, "");
	printf("}\n");
	fflush(stdout);

	if (!(worst_scaled < 16.0)) {
		fprintf(stderr, "ctb-linpack: residual check failed: scaled residual %g is not below 16\n", worst_scaled);
		return 3;
	}
	free(a); free(b0); free(x); free(r); free(rowsum); free(ipiv);
	return 0;
}
