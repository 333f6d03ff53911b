// The driver calls of the reference checks (docs/reference-checks.md), tried on the real driver with nothing of
// the project in between: a 16 MiB file mapped twice read-only; for flags 0xa (DEVICEMAP | READ_ONLY) and 0xb
// (PORTABLE too): register; the device pointer (cuMemHostGetDevicePointer_v2) and a cuMemcpyDtoD_v2 from it,
// compared with the file; a context made with cuCtxCreate_v2 copying the registered mapping ("second"), the
// unregistered second mapping ("staged") and, back in the primary context, the registered one ("first"), three
// rounds, GB/s; an async copy on a created stream; cuPointerGetAttribute(DEVICE_POINTER) before and after the
// release; then CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM (91). A missing symbol prints MISSING <name>.
// On the GPU machine: cc -o probe scripts/h200/reference-probe.c -ldl && ./probe  (it writes /tmp/f, 16 MiB).
// What it printed on the H200: docs/results/h200-reference-probe.txt.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/mman.h>
#include <time.h>
typedef int(*F)();void*L;F f(const char*n){F p=(F)dlsym(L,n);if(!p)printf("MISSING %s\n",n);return p;}
double now(){struct timespec t;clock_gettime(1,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(){L=dlopen("libcuda.so.1",2);size_t N=16<<20;
f("cuInit")(0);void*p,*c2;int d=0;f("cuDevicePrimaryCtxRetain")(&p,d);f("cuCtxSetCurrent")(p);
FILE*o=fopen("/tmp/f","w");char*b=malloc(N);for(size_t i=0;i<N;i++)b[i]=rand();fwrite(b,1,N,o);fclose(o);
int fd=open("/tmp/f",0);char*m=mmap(0,N,1,1,fd,0);char*m2=mmap(0,N,1,1,fd,0);
for(int fl=8;fl<=9;fl++){printf("flags %d reg %d\n",fl|2,f("cuMemHostRegister_v2")(m,N,fl|2));
unsigned long long dp=0,a=0,buf,dv=0;f("cuMemAlloc_v2")(&buf,N);
int rr=f("cuMemHostGetDevicePointer_v2")(&dp,m,0);printf("devptr %d %p %p\n",rr,(void*)dp,m);
printf("dtod %d\n",f("cuMemcpyDtoD_v2")(buf,dp,N));char*h=malloc(N);f("cuMemcpyDtoH_v2")(h,buf,N);printf("cmp %d\n",memcmp(h,b,N));
printf("ctxcreate %d\n",f("cuCtxCreate_v2")(&c2,0,d));unsigned long long b2;f("cuMemAlloc_v2")(&b2,N);
for(int k=0;k<3;k++){double t0=now();f("cuMemcpyHtoD_v2")(b2,m,N);double t1=now();f("cuMemcpyHtoD_v2")(b2,m2,N);double t2=now();f("cuCtxSetCurrent")(p);f("cuMemcpyHtoD_v2")(buf,m,N);double t3=now();f("cuCtxSetCurrent")(c2);
printf("GB/s second %.1f staged %.1f first %.1f\n",N/(t1-t0)/1e9,N/(t2-t1)/1e9,N/(t3-t2)/1e9);}
void*s;printf("stream %d\n",f("cuStreamCreate")(&s,0));int ra=f("cuMemcpyHtoDAsync_v2")(b2,m,N,s);printf("async %d sync %d\n",ra,f("cuStreamSynchronize")(s));f("cuStreamDestroy_v2")(s);
f("cuMemFree_v2")(b2);printf("destroy %d\n",f("cuCtxDestroy_v2")(c2));f("cuCtxSetCurrent")(p);
printf("q before %d\n",f("cuPointerGetAttribute")(&a,3,(unsigned long long)m));printf("unreg %d\n",f("cuMemHostUnregister")(m));
printf("q after %d %llx\n",f("cuPointerGetAttribute")(&dv,3,(unsigned long long)m),dv);f("cuMemFree_v2")(buf);}
int v;f("cuDeviceGetAttribute")(&v,91,d);printf("attr91 %d\n",v);}
