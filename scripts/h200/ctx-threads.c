// Does a cuCtxCreate / cuCtxDestroy on another thread overlap the main thread's driver work?
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
typedef int CUresult; typedef void *CUcontext; typedef int CUdevice; typedef unsigned long long CUdeviceptr;
static CUresult (*cuInit)(unsigned); static CUresult (*cuDeviceGet)(CUdevice*, int);
static CUresult (*cuCtxCreate)(CUcontext*, unsigned, CUdevice); static CUresult (*cuCtxDestroy)(CUcontext);
static CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice); static CUresult (*cuDevicePrimaryCtxReset)(CUdevice);
static CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
static CUresult (*cuCtxSetCurrent)(CUcontext); static CUresult (*cuMemAlloc)(CUdeviceptr*, size_t); static CUresult (*cuMemFree)(CUdeviceptr);
static CUresult (*cuMemHostRegister)(void*, size_t, unsigned); static CUresult (*cuMemHostUnregister)(void*);
static CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, size_t);
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e3+t.tv_nsec/1e6;}
#define L(n, s) n = dlsym(h, s); if(!n){fprintf(stderr,"no %s\n", s); exit(1);}
static CUdevice dev; static CUcontext prim;
static void work(const char *what){ // what the main thread does meanwhile: hazards-like calls, ~N ms
  double t=now(); cuCtxSetCurrent(prim);
  size_t n=1<<20; void *p=mmap(0,n,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0); memset(p,1,n);
  CUdeviceptr d; cuMemAlloc(&d,n);
  double worst=0; int i;
  for(i=0;i<100;i++){ double a=now(); cuMemHostRegister(p,n,0); cuMemcpyHtoD(d,p,n); cuMemHostUnregister(p); double b=now()-a; if(b>worst)worst=b; }
  cuMemFree(d); munmap(p,n);
  printf("  %s: 100 register/copy/unregister cycles %.1f ms (worst cycle %.1f ms)\n", what, now()-t, worst);
}
static void *destroyer(void *c){ double t=now(); CUresult r=cuCtxDestroy((CUcontext)c); printf("  thread: cuCtxDestroy %d in %.1f ms\n", r, now()-t); return 0; }
static void *creator(void *out){ double t=now(); CUresult r=cuCtxCreate((CUcontext*)out,0,dev); printf("  thread: cuCtxCreate %d in %.1f ms\n", r, now()-t); return 0; }
int main(void){
  void *h=dlopen("libcuda.so.1",RTLD_NOW); if(!h){fprintf(stderr,"%s\n",dlerror());return 1;}
  L(cuInit,"cuInit") L(cuDeviceGet,"cuDeviceGet") L(cuCtxCreate,"cuCtxCreate_v2") L(cuCtxDestroy,"cuCtxDestroy_v2")
  L(cuDevicePrimaryCtxRetain,"cuDevicePrimaryCtxRetain") L(cuDevicePrimaryCtxReset,"cuDevicePrimaryCtxReset_v2") L(cuDevicePrimaryCtxRelease,"cuDevicePrimaryCtxRelease_v2")
  L(cuCtxSetCurrent,"cuCtxSetCurrent") L(cuMemAlloc,"cuMemAlloc_v2") L(cuMemFree,"cuMemFree_v2")
  L(cuMemHostRegister,"cuMemHostRegister_v2") L(cuMemHostUnregister,"cuMemHostUnregister") L(cuMemcpyHtoD,"cuMemcpyHtoD_v2")
  double t=now(); cuInit(0); printf("cuInit %.1f ms\n", now()-t); cuDeviceGet(&dev,0);
  t=now(); cuDevicePrimaryCtxRetain(&prim,dev); printf("primary retain %.1f ms\n", now()-t);
  work("alone (warm-up)"); work("alone");
  for (int round=0; round<2; round++) {
  printf("round %d, serial:\n", round);
  CUcontext c; double s=now(); t=now(); cuCtxCreate(&c,0,dev); printf("  cuCtxCreate %.1f ms\n", now()-t);
  t=now(); cuCtxDestroy(c); printf("  cuCtxDestroy %.1f ms\n", now()-t);
  work("then");
  t=now(); cuDevicePrimaryCtxReset(dev); printf("  primary reset %.1f ms\n", now()-t);
  cuDevicePrimaryCtxRelease(dev); t=now(); cuDevicePrimaryCtxRetain(&prim,dev); printf("  primary retain again %.1f ms\n", now()-t);
  printf("  serial total %.1f ms\n", now()-s);
  printf("round %d, destroy on a thread beside work, reset, retain:\n", round);
  cuCtxCreate(&c,0,dev); cuCtxSetCurrent(prim);
  s=now(); pthread_t th; pthread_create(&th,0,destroyer,c);
  work("beside destroy");
  t=now(); cuDevicePrimaryCtxReset(dev); printf("  primary reset %.1f ms\n", now()-t);
  cuDevicePrimaryCtxRelease(dev); t=now(); cuDevicePrimaryCtxRetain(&prim,dev); printf("  primary retain again %.1f ms\n", now()-t);
  pthread_join(th,0); printf("  overlapped total %.1f ms\n", now()-s);
  printf("round %d, create on a thread beside work:\n", round);
  s=now(); CUcontext c2=0; pthread_create(&th,0,creator,&c2);
  work("beside create"); pthread_join(th,0); printf("  overlapped total %.1f ms\n", now()-s);
  cuCtxSetCurrent(prim); t=now(); cuCtxDestroy(c2); printf("  destroy %.1f ms\n", now()-t);
  }
  return 0;
}
