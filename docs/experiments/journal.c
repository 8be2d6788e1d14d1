// The enqueue's design in C, against a raw FULL commit and a journal beside SQLite (issue 11,
// BENCHMARKS.md "Enqueue against the disk"). Build and run in a scratch folder on the disk to
// measure: gcc -O2 -o journal journal.c -lsqlite3 && ./journal 1900 (the 2 KB order; 134 for one line).
#define _GNU_SOURCE
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <time.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e6+t.tv_nsec/1e3;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
#define N 300
static char payload[4096];
static int plen;
static void ex(sqlite3*db,const char*s){char*e=0;if(sqlite3_exec(db,s,0,0,&e)){fprintf(stderr,"%s: %s\n",s,e);exit(1);}}
static sqlite3* opendb(const char*p,const char*sync,int outbox){unlink(p);char w[256];sprintf(w,"%s-wal",p);unlink(w);sprintf(w,"%s-shm",p);unlink(w);
 sqlite3*db;sqlite3_open(p,&db);ex(db,"PRAGMA journal_mode=WAL");char s[64];sprintf(s,"PRAGMA synchronous=%s",sync);ex(db,s);
 if(outbox){ex(db,"CREATE TABLE items(id INTEGER PRIMARY KEY, doc BLOB NOT NULL UNIQUE, ws TEXT, lane TEXT, state TEXT, form TEXT, created INTEGER, payload BLOB)");
  ex(db,"CREATE INDEX items_open ON items(ws,lane,id) WHERE state='pending'");ex(db,"CREATE TABLE lanes(ws TEXT, lane TEXT, head INTEGER, PRIMARY KEY(ws,lane)) WITHOUT ROWID");
  ex(db,"CREATE TABLE counters(name TEXT PRIMARY KEY, value INTEGER) WITHOUT ROWID");ex(db,"INSERT INTO counters VALUES('pending',0)");}
 else ex(db,"CREATE TABLE t(id INTEGER PRIMARY KEY, payload BLOB)");
 return db;}
static double raw(sqlite3*db,sqlite3_stmt*st){double t=now();ex(db,"BEGIN");sqlite3_bind_blob(st,1,payload,plen,SQLITE_STATIC);sqlite3_step(st);sqlite3_reset(st);ex(db,"COMMIT");return now()-t;}
static long seq=0;
static double outboxins(sqlite3*db,sqlite3_stmt*ins,sqlite3_stmt*lane,sqlite3_stmt*cnt){
 ex(db,"BEGIN");unsigned char doc[16];for(int i=0;i<16;i++)doc[i]=rand();seq++;
 sqlite3_bind_blob(ins,1,doc,16,SQLITE_TRANSIENT);char l[32];sprintf(l,"lane-%ld",seq%50);sqlite3_bind_text(ins,2,l,-1,SQLITE_TRANSIENT);sqlite3_bind_blob(ins,3,payload,plen,SQLITE_STATIC);sqlite3_step(ins);sqlite3_reset(ins);
 sqlite3_bind_text(lane,1,l,-1,SQLITE_TRANSIENT);sqlite3_bind_int64(lane,2,seq);sqlite3_step(lane);sqlite3_reset(lane);sqlite3_step(cnt);sqlite3_reset(cnt);ex(db,"COMMIT");return 0;}
int main(int argc,char**argv){plen=argc>1?atoi(argv[1]):1900;memset(payload,'x',plen);
 sqlite3*r=opendb("exp_raw.db","FULL",0);sqlite3_stmt*rs;sqlite3_prepare_v2(r,"INSERT INTO t(payload) VALUES(?)",-1,&rs,0);
 sqlite3*o=opendb("exp_ob.db","NORMAL",1);sqlite3_stmt*ins,*lane,*cnt;
 sqlite3_prepare_v2(o,"INSERT INTO items(doc,ws,lane,state,form,created,payload) VALUES(?,'w',?,'pending','SalesOrder',1,?)",-1,&ins,0);
 sqlite3_prepare_v2(o,"INSERT INTO lanes VALUES('w',?,?) ON CONFLICT DO NOTHING",-1,&lane,0);
 sqlite3_prepare_v2(o,"UPDATE counters SET value=value+1 WHERE name='pending'",-1,&cnt,0);
 sqlite3*f=opendb("exp_full.db","NORMAL",1);sqlite3_stmt*fins,*flane,*fcnt;
 sqlite3_prepare_v2(f,"INSERT INTO items(doc,ws,lane,state,form,created,payload) VALUES(?,'w',?,'pending','SalesOrder',1,?)",-1,&fins,0);
 sqlite3_prepare_v2(f,"INSERT INTO lanes VALUES('w',?,?) ON CONFLICT DO NOTHING",-1,&flane,0);
 sqlite3_prepare_v2(f,"UPDATE counters SET value=value+1 WHERE name='pending'",-1,&fcnt,0);
 int wfd=open("exp_full.db-wal",O_RDWR);
 int jfd=open("exp_journal",O_RDWR|O_CREAT|O_TRUNC,0644);char*z=calloc(1,1<<20);for(int i=0;i<16;i++)write(jfd,z,1<<20);fsync(jfd);
 double a[N],b[N],c[N],d[N];long off=0;char rec[8192];
 for(int round=0;round<6;round++)
 for(int i=0;i<N;i++){
  a[i]=raw(r,rs);
  // B: journal append + fdatasync, then sqlite NORMAL outbox insert
  double t=now();memcpy(rec+64,payload,plen);int len=((plen+64+511)/512)*512;pwrite(jfd,rec,len,off);off+=len;if(off>(15<<20))off=0;fdatasync(jfd);outboxins(o,ins,lane,cnt);b[i]=now()-t;
  // C: sqlite outbox insert NORMAL then fdatasync of wal (current design)
  t=now();outboxins(f,fins,flane,fcnt);fdatasync(wfd);c[i]=now()-t;
  // D: journal only
  t=now();pwrite(jfd,rec,len,off);off+=len;if(off>(15<<20))off=0;fdatasync(jfd);d[i]=now()-t;
 }
 qsort(a,N,8,cmp);qsort(b,N,8,cmp);qsort(c,N,8,cmp);qsort(d,N,8,cmp);
 printf("payload %d: raw FULL %.0f us; journal+sqlite %.0f (%.2fx); wal-sync design %.0f (%.2fx); journal alone %.0f (%.2fx)\n",plen,a[N/2],b[N/2],a[N/2]/b[N/2],c[N/2],a[N/2]/c[N/2],d[N/2],a[N/2]/d[N/2]);
}
