// fdatasync from 1, 2 or 4 threads on one file, each writing k log-shaped pages first (issue 11,
// BENCHMARKS.md "Enqueue against the disk"): gcc -O2 -pthread -o parfsync parfsync.c && ./parfsync 2 6 1000
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <pthread.h>
#include <time.h>
#include <stdatomic.h>
static int fd; static atomic_long off; static int pages; static int iters;
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec/1e9;}
static void* worker(void*a){char buf[4096+24];memset(buf,7,sizeof buf);
 for(int i=0;i<iters;i++){for(int p=0;p<pages;p++){long o=atomic_fetch_add(&off,4096+24); if(o>60L*1024*1024){atomic_store(&off,0);o=0;} pwrite(fd,buf,sizeof buf,o);} fdatasync(fd);} return 0;}
int main(int argc,char**argv){int threads=atoi(argv[1]);pages=atoi(argv[2]);iters=atoi(argv[3]);
 fd=open("exp_par",O_RDWR|O_CREAT,0644);char*z=calloc(1,1<<20);for(int i=0;i<64;i++)pwrite(fd,z,1<<20,(long)i<<20);fsync(fd);
 pthread_t t[16];double s=now();for(int i=0;i<threads;i++)pthread_create(&t[i],0,worker,0);for(int i=0;i<threads;i++)pthread_join(t[i],0);double e=now()-s;
 printf("threads %d pages %d: %.0f fsyncs/s, %.0f us per fsync-op, per-thread latency %.0f us\n",threads,pages,threads*iters/e,e/(threads*iters)*1e6,e/iters*1e6);}
