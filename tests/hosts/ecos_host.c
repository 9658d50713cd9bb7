/* A non-Python co-simulation host: runs an SSP through libecosc and prints variables
 * at every communication point with full precision (%.17g). */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

void* ecos_simulation_create_from_ssp(const char* path, double step_size);
bool ecos_simulation_init(void* sim, double start_time, const char* parameter_set);
double ecos_simulation_step(void* sim, size_t steps);
bool ecos_simulation_get_real(void* sim, const char* identifier, double* value);
bool ecos_simulation_terminate(void* sim);
void ecos_simulation_destroy(void* sim);

int main(int argc, char** argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: %s system.ssp step n_steps instance::variable...\n", argv[0]);
        return 2;
    }
    void* sim = ecos_simulation_create_from_ssp(argv[1], atof(argv[2]));
    if (!sim || !ecos_simulation_init(sim, 0.0, "initialValues")) {
        fprintf(stderr, "could not create or initialize the simulation\n");
        return 1;
    }
    long n = atol(argv[3]);
    for (long k = 0; k <= n; ++k) {
        double t = k == 0 ? 0.0 : ecos_simulation_step(sim, 1);
        printf("%.17g", t);
        for (int i = 4; i < argc; ++i) {
            double value = 0.0;
            if (!ecos_simulation_get_real(sim, argv[i], &value)) {
                fprintf(stderr, "no variable %s\n", argv[i]);
                return 1;
            }
            printf(" %.17g", value);
        }
        printf("\n");
    }
    ecos_simulation_terminate(sim);
    ecos_simulation_destroy(sim);
    return 0;
}
